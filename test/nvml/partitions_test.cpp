// DynamicMIG publishing on the mock (upstream-driver.md §2.4, §1.2): which GPUs qualify, whether
// the full GPU is published, device names, counter sets, counters and consumesCounters.
#include "nvml/partitions.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "nvml/discovery.hpp"
#include "nvml/published_devices.hpp"
#include "test/nvml/mock_nvml.hpp"

namespace nvdra::nvml {
namespace {

using testing::MockNvml;

DriverResources publish(const std::string& profile, bool dynamic_mig) {
  MockNvml mock(profile);
  auto lib = mock.open();
  auto model = discover(*lib);
  if (!model) throw std::runtime_error(model.error().describe());
  return published_gpu_resources(*model, dynamic_mig);
}

const PublishedDevice* find(const DriverResources& r, const std::string& name) {
  for (const auto& d : r.devices)
    if (d.name == name) return &d;
  return nullptr;
}

std::map<std::string, std::string> h100_counters() {
  std::map<std::string, std::string> c{{"multiprocessors", "132"}, {"copy-engines", "8"}, {"decoders", "7"},
                                       {"encoders", "0"},          {"jpeg-engines", "7"}, {"ofa-engines", "1"},
                                       {"memory", "81152Mi"}};
  for (int i = 0; i < 8; ++i) c["memory-slice-" + std::to_string(i)] = "1";
  return c;
}

TEST(DynamicMigPublishing, HopperPublishesTheFullGpuAndEveryProfilePlacementWithCounters) {
  const auto r = publish("hgx-h100", true);
  ASSERT_EQ(r.shared_counters.size(), 8u);
  EXPECT_EQ(r.devices.size(), 8u * 26u);  // full GPU + 7 + 7 + 4 + 3 + 2 + 1 + 1 per GPU
  const auto& set = r.shared_counters.at(0);
  EXPECT_EQ(set.name, "gpu-0-counter-set");  // bus 1B sorts first
  EXPECT_EQ(set.counters, h100_counters());

  std::set<std::string> names;
  for (const auto& d : r.devices)
    if (d.name.starts_with("gpu-0-")) names.insert(d.name);
  const std::set<std::string> expected = {
      "gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1", "gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3",
      "gpu-0-mig-1g10gb-19-4", "gpu-0-mig-1g10gb-19-5", "gpu-0-mig-1g10gb-19-6", "gpu-0-mig-1g10gb-me-20-0",
      "gpu-0-mig-1g10gb-me-20-1", "gpu-0-mig-1g10gb-me-20-2", "gpu-0-mig-1g10gb-me-20-3", "gpu-0-mig-1g10gb-me-20-4",
      "gpu-0-mig-1g10gb-me-20-5", "gpu-0-mig-1g10gb-me-20-6", "gpu-0-mig-1g20gb-15-0", "gpu-0-mig-1g20gb-15-2",
      "gpu-0-mig-1g20gb-15-4", "gpu-0-mig-1g20gb-15-6", "gpu-0-mig-2g20gb-14-0", "gpu-0-mig-2g20gb-14-2",
      "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4", "gpu-0-mig-4g40gb-5-0",
      "gpu-0-mig-7g80gb-0-0"};
  EXPECT_EQ(names, expected);

  const auto* full = find(r, "gpu-0");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(std::get<std::string>(full->attributes.at("type")), "gpu");
  const std::map<std::string, std::string> max_caps{{"multiprocessors", "132"}, {"copyEngines", "8"},
                                                    {"decoders", "7"},          {"encoders", "0"},
                                                    {"jpegEngines", "7"},       {"ofaEngines", "1"},
                                                    {"memory", "81152Mi"}};
  EXPECT_EQ(full->capacity, max_caps);  // the largest profile's, not NVML's total memory
  ASSERT_EQ(full->consumes_counters.size(), 1u);
  EXPECT_EQ(full->consumes_counters[0].counter_set, "gpu-0-counter-set");
  EXPECT_EQ(full->consumes_counters[0].counters, h100_counters());

  const auto* mig = find(r, "gpu-0-mig-1g20gb-15-4");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(std::get<std::string>(mig->attributes.at("type")), "mig");
  EXPECT_EQ(std::get<std::string>(mig->attributes.at("profile")), "1g.20gb");
  EXPECT_EQ(std::get<std::string>(mig->attributes.at("parentUUID")), "GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e01");
  EXPECT_EQ(mig->attributes.count("uuid"), 0u);  // does not exist yet
  const std::map<std::string, std::string> caps{{"multiprocessors", "26"}, {"copyEngines", "1"}, {"decoders", "1"},
                                                {"encoders", "0"},         {"jpegEngines", "1"}, {"ofaEngines", "0"},
                                                {"memory", "20096Mi"}};
  EXPECT_EQ(mig->capacity, caps);
  ASSERT_EQ(mig->consumes_counters.size(), 1u);
  const std::map<std::string, std::string> uses{
      {"multiprocessors", "26"}, {"copy-engines", "1"}, {"decoders", "1"},          {"encoders", "0"},
      {"jpeg-engines", "1"},     {"ofa-engines", "0"},  {"memory", "20096Mi"},      {"memory-slice-4", "1"},
      {"memory-slice-5", "1"}};
  EXPECT_EQ(mig->consumes_counters[0].counters, uses);
  const auto* whole = find(r, "gpu-3-mig-7g80gb-0-0");
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->consumes_counters[0].counter_set, "gpu-3-counter-set");
  EXPECT_EQ(whole->consumes_counters[0].counters.count("memory-slice-7"), 1u);
}

TEST(DynamicMigPublishing, AmpereQualifiesOnlyInMigModeAndThenWithoutItsFullGpu) {
  const auto r = publish("dgx-a100", true);
  ASSERT_EQ(r.shared_counters.size(), 2u);
  EXPECT_EQ(r.shared_counters[0].name, "gpu-6-counter-set");
  EXPECT_EQ(r.shared_counters[1].name, "gpu-7-counter-set");
  EXPECT_EQ(r.shared_counters[0].counters.at("memory"), "40192Mi");
  EXPECT_EQ(r.shared_counters[0].counters.at("multiprocessors"), "98");
  EXPECT_EQ(r.devices.size(), 6u + 2u * 25u);
  for (int i = 0; i < 6; ++i) {
    const auto* gpu = find(r, "gpu-" + std::to_string(i));
    ASSERT_NE(gpu, nullptr);
    EXPECT_TRUE(gpu->consumes_counters.empty());
    EXPECT_EQ(gpu->capacity.at("memory"), "40Gi");  // MIG off: a plain GPU, NVML total memory
  }
  EXPECT_EQ(find(r, "gpu-6"), nullptr);
  EXPECT_EQ(find(r, "gpu-7"), nullptr);
  // Abstract devices for every placement, not the admin-created instances (no uuid).
  const auto* m = find(r, "gpu-7-mig-1g10gb-15-6");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->attributes.count("uuid"), 0u);
  EXPECT_NE(find(r, "gpu-6-mig-1g5gb-me-20-3"), nullptr);
}

TEST(DynamicMigPublishing, GateOffPublishesAsBeforeAndNonMigGpusStayPlain) {
  {
    MockNvml mock("dgx-a100");
    auto lib = mock.open();
    auto model = discover(*lib);
    ASSERT_TRUE(model);
    const auto off = published_gpu_resources(*model, false);
    EXPECT_EQ(off.devices, published_gpu_devices(*model));
    EXPECT_TRUE(off.shared_counters.empty());
  }  // the library (and its NVML session) goes before the next profile is loaded
  const auto l4 = publish("l4", true);
  EXPECT_TRUE(l4.shared_counters.empty());
  ASSERT_FALSE(l4.devices.empty());
  for (const auto& d : l4.devices) EXPECT_TRUE(d.consumes_counters.empty()) << d.name;
}

TEST(DynamicMigPublishing, VgpuGuestIsNotDynamicMigCapable) {
  const std::string path = ::testing::TempDir() + "/h100-vgpu.yaml";
  std::ofstream(path) << "driverVersion: \"580.105.08\"\ncudaDriverVersion: 13000\ngpus:\n"
                         "  - {product: NVIDIA H100 80GB HBM3, uuid: GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e01, "
                         "pciBusId: \"00000000:1B:00.0\", virtualizationMode: vgpu}\n";
  const auto r = publish(path, true);
  EXPECT_TRUE(r.shared_counters.empty());
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].name, "gpu-0");
}

}  // namespace
}  // namespace nvdra::nvml
