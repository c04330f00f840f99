// Discovery through the production dlopen path against the mock's machine profiles.
#include "nvml/discovery.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nvml/mock/test_hooks.h"
#include "test/nvml/mock_nvml.hpp"
#include "test/support/prerequisite.hpp"

namespace nvdra::nvml {
namespace {

using testing::MockNvml;

DeviceModel discover_profile(MockNvml& mock, const DiscoveryOptions& options = {}) {
  auto lib = mock.open();
  auto model = discover(*lib, options);
  if (!model) throw std::runtime_error(model.error().message);
  return std::move(model).value();
}

TEST(Discovery, DgxA100ReportsRealProductFactsAndTheStaticMigLayout) {
  MockNvml mock("dgx-a100");
  const DeviceModel m = discover_profile(mock);
  EXPECT_EQ(m.system.driver_version, "570.148.08");
  EXPECT_EQ(m.system.cuda_driver_version, 12080);
  ASSERT_EQ(m.gpus.size(), 8u);
  const GpuInfo& g0 = m.gpus[0];
  EXPECT_EQ(g0.product_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(g0.brand, "Nvidia");
  EXPECT_EQ(g0.architecture, "Ampere");
  EXPECT_EQ(g0.cuda_cc_major, 8);
  EXPECT_EQ(g0.cuda_cc_minor, 0);
  EXPECT_EQ(g0.memory_bytes, 42949672960ULL);
  EXPECT_EQ(g0.pci.bus_id, "0000:07:00.0");
  EXPECT_EQ(g0.pci.device_id, 0x20B010DEu);
  EXPECT_TRUE(g0.mig_capable);
  EXPECT_FALSE(g0.mig_enabled);
  EXPECT_FALSE(g0.fabric.has_value());
  EXPECT_EQ(g0.mig_profiles.size(), 7u);
  EXPECT_TRUE(g0.mig_devices.empty());

  const GpuInfo& g6 = m.gpus[6];
  ASSERT_TRUE(g6.mig_enabled);
  ASSERT_EQ(g6.mig_devices.size(), 3u);
  std::vector<std::string> names;
  for (const auto& d : g6.mig_devices) {
    names.push_back(d.canonical_name());
    EXPECT_EQ(d.parent_uuid, g6.uuid);
    EXPECT_EQ(d.uuid.rfind("MIG-", 0), 0u);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gpu-6-mig-3g20gb-9-0", "gpu-6-mig-2g10gb-14-4", "gpu-6-mig-1g5gb-19-6"}));
  const MigDeviceInfo& small = g6.mig_devices[2];
  EXPECT_EQ(small.profile.memory_mib, 4864u);
  EXPECT_EQ(small.profile.multiprocessors, 14u);
  EXPECT_EQ(small.placement, (MigPlacement{6, 1}));
  EXPECT_EQ(m.gpus[7].mig_devices[1].profile.name, "1g.5gb+me");
  EXPECT_EQ(clique_id(m).value(), "");
}

TEST(Discovery, HgxH100IsMigCapableWithMigOffAndFabricWithoutAClique) {
  MockNvml mock("hgx-h100");
  const DeviceModel m = discover_profile(mock);
  ASSERT_EQ(m.gpus.size(), 8u);
  for (const auto& g : m.gpus) {
    EXPECT_EQ(g.product_name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.architecture, "Hopper");
    EXPECT_TRUE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
    ASSERT_TRUE(g.fabric.has_value());
    EXPECT_EQ(g.fabric->state, 3u);
    EXPECT_EQ(g.fabric->clique(), "");
  }
  EXPECT_EQ(m.gpus[0].mig_profiles[0].name, "1g.10gb");
  EXPECT_EQ(m.gpus[7].pci.bus_id, "0000:df:00.0");
  EXPECT_EQ(clique_id(m).value(), "");
}

TEST(Discovery, Gb200TrayReportsItsNvlinkCliqueAndHighPciDomains) {
  MockNvml mock("gb200-nvl");
  const DeviceModel m = discover_profile(mock);
  ASSERT_EQ(m.gpus.size(), 4u);
  EXPECT_EQ(m.gpus[0].pci.bus_id, "0008:01:00.0");
  EXPECT_EQ(m.gpus[3].pci.bus_id, "0019:01:00.0");
  EXPECT_EQ(m.gpus[0].addressing_mode.value_or(""), "ATS");
  EXPECT_EQ(m.gpus[0].architecture, "Blackwell");
  EXPECT_EQ(m.gpus[0].fabric->cluster_uuid, "9c6f5af3-53bf-49b5-a436-b66766c413c3");
  EXPECT_EQ(clique_id(m).value(), "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026");
}

// CrashOnNVLinkFabricErrors: strict (the gate on) fails on a GPU whose fabric is still training;
// legacy (the gate off) leaves that GPU out and takes the clique from the others.
TEST(Discovery, CliqueIdStrictFailsOnAnUnfinishedFabricAndLegacySkipsThatGpu) {
  MockNvml mock("gb200-nvl");
  DeviceModel m = discover_profile(mock);
  m.gpus[1].fabric->state = 2;  // NVML_GPU_FABRIC_STATE_IN_PROGRESS
  auto strict = clique_id(m, true);
  ASSERT_FALSE(strict);
  EXPECT_NE(strict.error().message.find("is not COMPLETED"), std::string::npos) << strict.error().message;
  EXPECT_EQ(clique_id(m, false).value(), "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026");
  m.gpus[1].fabric->state = 3;
  m.gpus[1].fabric->status = 1;  // completed with an error
  EXPECT_FALSE(clique_id(m, true));
  EXPECT_EQ(clique_id(m, false).value(), "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026");
}

// nvdraMockSetFabricState: a fabric still registering (IN_PROGRESS) that completes later, as NVML
// reads it on the next query; a negative state restores the profile's.
TEST(Discovery, FabricStateChangesAtRunTimeThroughTheMockHook) {
  MockNvml mock("gb200-nvl");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  auto set_state = mock.hook<decltype(&nvdraMockSetFabricState)>("nvdraMockSetFabricState");
  ASSERT_EQ(set_state(m.gpus[1].uuid.c_str(), 2), 0);  // NVML_GPU_FABRIC_STATE_IN_PROGRESS
  const DeviceModel training = discover(*lib).value();
  EXPECT_EQ(training.gpus[1].fabric->state, 2u);
  EXPECT_EQ(training.gpus[0].fabric->state, 3u);
  EXPECT_FALSE(clique_id(training, true));
  ASSERT_EQ(set_state(m.gpus[1].uuid.c_str(), 3), 0);
  EXPECT_EQ(clique_id(discover(*lib).value(), true).value(), "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026");
  ASSERT_EQ(set_state(m.gpus[1].uuid.c_str(), 2), 0);
  ASSERT_EQ(set_state(m.gpus[1].uuid.c_str(), -1), 0);
  EXPECT_EQ(discover(*lib).value().gpus[1].fabric->state, 3u);
  EXPECT_NE(set_state("GPU-no-such", 2), 0);
}

// release_gpus (before a GPU leaves nvidia): until its result is dropped, no call looks a GPU up
// (NVML would attach it again), while the calls that need no GPU still answer.
TEST(Discovery, AfterReleaseGpusNoCallLooksUpAGpuUntilTheCallerIsDone) {
  MockNvml mock("gb200-nvl");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  {
    auto released = lib->release_gpus("GPU 0008:01:00.0 (gpu-vfio-0) is being handed to vfio-pci");
    ASSERT_TRUE(released) << released.error().describe();
    auto fabric = lib->fabric(m.gpus[1].uuid);
    ASSERT_FALSE(fabric);
    EXPECT_EQ(fabric.error().code, ErrorCode::kUnavailable);
    EXPECT_EQ(fabric.error().message, "NVML is not asked about GPU " + m.gpus[1].uuid +
                                          " now: GPU 0008:01:00.0 (gpu-vfio-0) is being handed to vfio-pci (a lookup "
                                          "would open the GPU again and hold up the unbind)");
    auto again = discover(*lib);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, ErrorCode::kUnavailable);
    EXPECT_FALSE(lib->mig_devices(m.gpus[0].uuid));
    EXPECT_FALSE(lib->recovery_action(m.gpus[0].uuid));
    EXPECT_FALSE(lib->watch_events({m.gpus[0].uuid}, 0));
    EXPECT_TRUE(lib->system_info());
    EXPECT_EQ(lib->gpu_count().value(), m.gpus.size());
  }
  EXPECT_EQ(lib->fabric(m.gpus[1].uuid).value()->cluster_uuid, m.gpus[1].fabric->cluster_uuid);
  EXPECT_EQ(discover(*lib).value().gpus.size(), m.gpus.size());
}

TEST(Discovery, L4IsNotMigCapableAndHasNoFabric) {
  MockNvml mock("l4");
  const DeviceModel m = discover_profile(mock);
  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_EQ(m.gpus[0].architecture, "Ada Lovelace");
  EXPECT_FALSE(m.gpus[0].mig_capable);
  EXPECT_TRUE(m.gpus[0].mig_profiles.empty());
  EXPECT_FALSE(m.gpus[0].fabric.has_value());
  EXPECT_EQ(m.gpus[0].memory_bytes, 23034ULL << 20);
}

TEST(Discovery, PcieRootAndNumaNodeComeFromSysfs) {
  MockNvml mock("l4");
  namespace fs = std::filesystem;
  const fs::path sys = fs::path(mock.dir()) / "sys";
  const fs::path real = sys / "devices/pci0000:00/0000:00:03.0";
  fs::create_directories(real);
  fs::create_directories(sys / "bus/pci/devices");
  std::ofstream(real / "numa_node") << "1\n";
  fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:03.0", sys / "bus/pci/devices/0000:00:03.0");
  const DeviceModel m = discover_profile(mock, DiscoveryOptions{sys.string()});
  EXPECT_EQ(m.gpus[0].pcie_root.value_or(""), "pci0000:00");
  EXPECT_EQ(m.gpus[0].numa_node.value_or(-1), 1);
  const DeviceModel without = discover_profile(mock, DiscoveryOptions{(sys / "missing").string()});
  EXPECT_FALSE(without.gpus[0].pcie_root.has_value());
  EXPECT_FALSE(without.gpus[0].numa_node.has_value());
}

TEST(Discovery, ABadProfileFailsTheLoadNamingTheFileGpuAndField) {
  MockNvml mock("l4");
  const std::string path = mock.dir() + "/bad.yaml";
  std::ofstream(path) << "driverVersion: \"570.148.08\"\ncudaDriverVersion: 12080\ngpus:\n"
                         "  - {product: NVIDIA T4, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: \"00000000:07:00.0\"}\n";
  ::setenv("NVDRA_MOCK_PROFILE", path.c_str(), 1);
  auto lib = open_nvml(LoadOptions{MockNvml::library_path(), "/"});
  ASSERT_FALSE(lib.ok());
  const std::string msg = lib.error().message;
  EXPECT_NE(msg.find("nvmlInitWithFlags"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("gpus[0] (GPU-00000000-0000-4000-8000-000000000001)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("field product: unknown product 'NVIDIA T4'"), std::string::npos) << msg;
}

TEST(Discovery, AMissingLibraryNamesEveryPathSearched) {
  MockNvml mock("l4");
  auto lib = open_nvml(LoadOptions{"", mock.dir()});
  NVDRA_REQUIRE_PREREQUISITE(!lib.ok(), "no real libnvidia-ml.so.1 on the loader path (this one is found first)");
  const std::string msg = lib.error().message;
  EXPECT_NE(msg.find(mock.dir() + "/usr/lib64/libnvidia-ml.so.1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dynamic loader search path"), std::string::npos) << msg;
}

TEST(Discovery, TheLibraryIsFoundUnderTheDriverRootLikeUpstreamDoes) {
  MockNvml mock("l4");
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(mock.dir()) / "usr/lib/x86_64-linux-gnu";
  fs::create_directories(dir);
  fs::create_symlink(MockNvml::library_path(), dir / "libnvidia-ml.so.1");
  auto lib = open_nvml(LoadOptions{"", mock.dir()});
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  // The symlink is resolved and the resolved file opened.
  EXPECT_EQ((*lib)->describe(), fs::canonical(MockNvml::library_path()).string() + " (driver 570.158.01)");
}

}  // namespace
}  // namespace nvdra::nvml
