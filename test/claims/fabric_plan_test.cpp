// plan_fabric: upstream's FabricManagerPartitioning rule and the seed's fabricTopologyConfig on the
// 8-GPU HGX table (ids 1: [1..8], 2: [1 2 3 4], 3: [5 6 7 8], 4-7: pairs, 8-15: singles).
#include <gtest/gtest.h>

#include "agent/claims/fabric_plan.hpp"

namespace nvdra::claims {
namespace {

const std::optional<std::vector<fm::Partition>> kTable = fm::hgx8_partitions();
constexpr FabricGates kUpstream{true, false};
constexpr FabricGates kSeed{false, true};

FabricRequest req(std::vector<unsigned> modules, std::optional<FabricTopologyConfig> cfg = std::nullopt) {
  return FabricRequest{std::move(modules), {}, std::move(cfg)};
}

FabricTopologyConfig cfg(std::string strategy, std::optional<int64_t> size = std::nullopt,
                         std::vector<std::string> ids = {}, std::string model = "BareMetal") {
  FabricTopologyConfig c;
  c.strategy = std::move(strategy);
  c.partition_size = size;
  c.partition_ids = std::move(ids);
  c.virtualization_model = std::move(model);
  return c;
}

TEST(FabricPlan, UpstreamRuleActivatesThePartitionWhoseModuleSetEqualsTheClaimsGpus) {
  auto p = plan_fabric(req({1, 2, 3, 4}), kTable, "", kUpstream);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->partitions, std::vector<unsigned>{2});
  EXPECT_TRUE(p->activate);
  auto one = plan_fabric(req({7}), kTable, "", kUpstream);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->partitions, std::vector<unsigned>{14});
}

TEST(FabricPlan, UpstreamRuleRefusesAModuleSetNoPartitionHoldsWithUpstreamsMessage) {
  auto p = plan_fabric(req({1, 5}), kTable, "", kUpstream);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "fabric manager: GPU module set [1 5] does not match any FM partition; refusing partition activation");
}

TEST(FabricPlan, NothingIsPlannedWithTheGatesOffWithoutFmOrForMigOnlyClaims) {
  auto off = plan_fabric(req({1, 2, 3, 4}), kTable, "", FabricGates{});
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->partitions.empty());
  auto no_fm = plan_fabric(req({1, 5}), std::nullopt, "no NVSwitch", kUpstream);
  ASSERT_TRUE(no_fm.ok());
  EXPECT_TRUE(no_fm->partitions.empty());
  auto seed_without_block = plan_fabric(req({1, 5}), kTable, "", kSeed);
  ASSERT_TRUE(seed_without_block.ok());
  EXPECT_TRUE(seed_without_block->partitions.empty());
  auto mig_only = plan_fabric(req({}), kTable, "", kUpstream);
  ASSERT_TRUE(mig_only.ok());
  EXPECT_TRUE(mig_only->partitions.empty());
}

TEST(FabricPlan, AutoPicksThePartitionOfPartitionSizeHoldingExactlyTheClaimsGpus) {
  auto p = plan_fabric(req({5, 6}, cfg("Auto", 2)), kTable, "", kSeed);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->partitions, std::vector<unsigned>{6});
  EXPECT_EQ(p->rule, "Auto");
  auto wrong_size = plan_fabric(req({5, 6}, cfg("Auto", 4)), kTable, "", kSeed);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_EQ(wrong_size.error().field, "fabricTopologyConfig.partitionSize");
  auto no_match = plan_fabric(req({2, 3}, cfg("Auto", 2)), kTable, "", kSeed);
  ASSERT_FALSE(no_match.ok());
  EXPECT_EQ(no_match.error().field, "fabricTopologyConfig.strategy");
  EXPECT_NE(no_match.error().message.find("4 [1 2], 5 [3 4], 6 [5 6], 7 [7 8]"), std::string::npos)
      << no_match.error().message;
}

TEST(FabricPlan, ManualActivatesTheListedIdsAndFailsNamingAWrongOrNonCoveringId) {
  auto p = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"partition-2"})), kTable, "", kSeed);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->partitions, std::vector<unsigned>{2});
  auto unknown = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"4", "partition-42"})), kTable, "", kSeed);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().field, "fabricTopologyConfig.partitionIDs[1]");
  EXPECT_NE(unknown.error().message.find("\"partition-42\""), std::string::npos);
  auto short_of = plan_fabric(req({1, 2, 3}, cfg("Manual", std::nullopt, {"4"})), kTable, "", kSeed);
  ASSERT_FALSE(short_of.ok());
  EXPECT_EQ(short_of.error().field, "fabricTopologyConfig.partitionIDs");
  EXPECT_NE(short_of.error().message.find("modules [3]"), std::string::npos) << short_of.error().message;
  auto overlapping = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"2", "4"})), kTable, "", kSeed);
  ASSERT_FALSE(overlapping.ok());
  EXPECT_EQ(overlapping.error().field, "fabricTopologyConfig.partitionIDs[1]");
}

TEST(FabricPlan, VirtualizationModelsAndDisabled) {
  auto disabled = plan_fabric(req({1, 5}, cfg("Disabled")), kTable, "", kSeed);
  ASSERT_TRUE(disabled.ok());
  EXPECT_TRUE(disabled->partitions.empty());
  auto vgpu = plan_fabric(req({1, 5}, cfg("Auto", std::nullopt, {}, "VGPU")), kTable, "", kSeed);
  ASSERT_TRUE(vgpu.ok());
  EXPECT_TRUE(vgpu->partitions.empty());
  auto guest = plan_fabric(req({1, 2, 3, 4}, cfg("Auto", 4, {}, "FullPassthrough")), kTable, "", kSeed);
  ASSERT_TRUE(guest.ok());
  EXPECT_EQ(guest->partitions, std::vector<unsigned>{2});
  EXPECT_FALSE(guest->activate);
  auto shared = plan_fabric(req({1, 2, 3, 4}, cfg("Auto", 4, {}, "SharedNVSwitch")), kTable, "", kSeed);
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(shared->activate);
}

TEST(FabricPlan, MinBandwidthIsCheckedAgainstFmsNvlinkFiguresAndMaxLatencyIsRefused) {
  auto c = cfg("Auto", 2);
  c.min_bandwidth = 900;  // 18 links x 25000 MB/s x 2
  auto ok = plan_fabric(req({1, 2}, c), kTable, "", kSeed);
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  c.min_bandwidth = 901;
  auto low = plan_fabric(req({1, 2}, c), kTable, "", kSeed);
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.error().field, "fabricTopologyConfig.minBandwidth");
  EXPECT_NE(low.error().message.find("gives 900 GB/s"), std::string::npos) << low.error().message;
  auto single = cfg("Auto");
  single.min_bandwidth = 1;
  EXPECT_FALSE(plan_fabric(req({3}, single), kTable, "", kSeed).ok());  // a lone GPU has no NVLink peer
  auto latency = cfg("Auto");
  latency.max_latency = 0.1;
  auto refused = plan_fabric(req({1, 2}, latency), kTable, "", kSeed);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().field, "fabricTopologyConfig.maxLatency");
}

TEST(FabricPlan, ABlockWithoutFmOrForMigOnlyFailsNamingWhy) {
  auto no_fm = plan_fabric(req({1, 2}, cfg("Auto")), std::nullopt, "no NVSwitch (x is empty)", kSeed);
  ASSERT_FALSE(no_fm.ok());
  EXPECT_NE(no_fm.error().message.find("no NVSwitch (x is empty)"), std::string::npos);
  EXPECT_FALSE(plan_fabric(req({}, cfg("Auto")), kTable, "", kSeed).ok());
}

}  // namespace
}  // namespace nvdra::claims
