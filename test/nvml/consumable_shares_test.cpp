// Upstream's consumable_shares.go semantics on published devices (upstream-driver.md §4.3).
#include "nvml/consumable_shares.hpp"

#include <gtest/gtest.h>

namespace nvdra::nvml {
namespace {

PublishedDevice device(const std::string& type, const std::string& memory) {
  PublishedDevice d;
  d.name = type == "vfio" ? "gpu-vfio-0" : "gpu-0";
  d.attributes["type"] = type;
  d.attributes["resource.kubernetes.io/numaNode"] = int64_t{1};
  if (!memory.empty()) d.capacity["memory"] = memory;
  return d;
}

TEST(ConsumableShares, ParsesUpstreamsValues) {
  EXPECT_EQ(parse_consumable_shares("disabled")->mode, ConsumableShares::Mode::kDisabled);
  EXPECT_EQ(parse_consumable_shares("memory")->mode, ConsumableShares::Mode::kMemory);
  EXPECT_EQ(parse_consumable_shares("unlimited")->mode, ConsumableShares::Mode::kUnlimited);
  EXPECT_EQ(*parse_consumable_shares("3"), (ConsumableShares{ConsumableShares::Mode::kCount, 3}));
  for (const char* bad : {"0", "-3", "3x", "Memory"}) {
    auto r = parse_consumable_shares(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message, std::string("invalid value for --consumable-shares: \"") + bad +
                                     "\" (must be 'disabled', 'memory', 'unlimited', or a positive integer)");
  }
}

TEST(ConsumableShares, QuantityBytes) {
  EXPECT_EQ(binary_quantity_bytes("40Gi"), uint64_t{40} << 30);
  EXPECT_EQ(binary_quantity_bytes("4864Mi"), uint64_t{4864} << 20);
  EXPECT_EQ(binary_quantity_bytes("1234567"), 1234567u);
  EXPECT_FALSE(binary_quantity_bytes("1.5Gi"));
  EXPECT_FALSE(binary_quantity_bytes("40G"));
}

TEST(ConsumableShares, CountModeAddsSharesAndRoundsMemoryDownTo1Mi) {
  auto d = device("gpu", std::to_string((uint64_t{40} << 30) + 12345));  // not a multiple of 1Mi
  apply_consumable_shares(d, ConsumableShares{ConsumableShares::Mode::kCount, 3});
  EXPECT_TRUE(d.allow_multiple_allocations);
  EXPECT_EQ(d.capacity.at("memory"), "40Gi");
  EXPECT_EQ(d.request_policies.at("memory"), (CapacityRequestPolicy{"0", "0", "40Gi", "1Mi"}));
  EXPECT_EQ(d.capacity.at("shares"), "3");
  EXPECT_EQ(d.request_policies.at("shares"), (CapacityRequestPolicy{"1", "1", "3", "1"}));
}

TEST(ConsumableShares, MemoryAndUnlimitedModes) {
  auto m = device("mig", "4864Mi");
  apply_consumable_shares(m, ConsumableShares{ConsumableShares::Mode::kMemory, 0});
  EXPECT_EQ(m.request_policies.at("memory"), (CapacityRequestPolicy{"4864Mi", "1Mi", "4864Mi", "1Mi"}));
  EXPECT_EQ(m.capacity.count("shares"), 0u);
  auto u = device("gpu", "80Gi");
  apply_consumable_shares(u, ConsumableShares{ConsumableShares::Mode::kUnlimited, 0});
  EXPECT_EQ(u.request_policies.at("memory"), (CapacityRequestPolicy{"0", "0", "80Gi", "1Mi"}));
}

TEST(ConsumableShares, NeverVfioNorDisabled) {
  auto v = device("vfio", "");
  apply_consumable_shares(v, ConsumableShares{ConsumableShares::Mode::kCount, 3});
  EXPECT_EQ(v, device("vfio", ""));
  auto g = device("gpu", "40Gi");
  apply_consumable_shares(g, ConsumableShares{});
  EXPECT_EQ(g, device("gpu", "40Gi"));
  // A device without memory capacity still becomes multi-allocatable (upstream returns after that).
  auto nomem = device("gpu", "");
  apply_consumable_shares(nomem, ConsumableShares{ConsumableShares::Mode::kMemory, 0});
  EXPECT_TRUE(nomem.allow_multiple_allocations);
  EXPECT_TRUE(nomem.request_policies.empty());
}

TEST(ListTypeAttributes, NumaNodeBecomesAOneElementList) {
  DriverResources r;
  r.devices.push_back(device("gpu", "40Gi"));
  apply_device_options(r, ConsumableShares{}, false);
  EXPECT_EQ(r.devices[0].attributes.at("resource.kubernetes.io/numaNode"), AttributeValue(int64_t{1}));
  apply_device_options(r, ConsumableShares{}, true);
  EXPECT_EQ(r.devices[0].attributes.at("resource.kubernetes.io/numaNode"), AttributeValue(std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace nvdra::nvml
