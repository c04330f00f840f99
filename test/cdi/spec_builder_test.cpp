#include "cdi/spec_builder.hpp"

#include <gtest/gtest.h>

#include "cdi/naming.hpp"
#include "cdi/spec_json.hpp"

namespace nvdra::cdi {
namespace {

ContainerEdits node(std::string path) {
  ContainerEdits e;
  e.device_nodes.push_back(DeviceNode{.path = std::move(path)});
  return e;
}

TEST(SpecBuilder, ClaimSpecNamesDevicesByClaimAndReturnsOneIdPerDevice) {
  auto built = build_claim_spec(kGpuVendor, "3b1f", {{"gpu-0", node("/dev/nvidia0")}, {"gpu-1", node("/dev/nvidia1")}});
  ASSERT_TRUE(built.ok()) << built.error().describe();
  EXPECT_EQ(built->file_name, "k8s.gpu.nvidia.com-claim_3b1f.yaml") << "upstream's name: its unprepare removes it";
  EXPECT_EQ(built->spec.kind, "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(built->device_ids, (std::vector<std::string>{"k8s.gpu.nvidia.com/claim=3b1f-gpu-0",
                                                          "k8s.gpu.nvidia.com/claim=3b1f-gpu-1"}));
  EXPECT_EQ(built->content, serialize(built->spec));
  EXPECT_EQ(minimum_version(built->spec), "0.5.0") << "device names start with a digit";
}

TEST(SpecBuilder, DeviceEditsRepeatedAtSpecLevelAreDropped) {
  ContainerEdits common = node("/dev/nvidiactl");
  ContainerEdits dev = node("/dev/nvidia0");
  dev.append(common);
  auto built = build_claim_spec(kGpuVendor, "uid", {{"gpu-0", dev}}, common);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->spec.devices[0].edits, node("/dev/nvidia0"));
  EXPECT_EQ(*built->spec.edits, common);
}

TEST(SpecBuilder, DuplicateDeviceInOneClaimIsRefusedNamingClaimAndDevice) {
  auto built = build_claim_spec(kGpuVendor, "uid-1", {{"gpu-0", {}}, {"gpu-0", {}}});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().claim, "uid-1");
  EXPECT_NE(built.error().message.find("uid-1-gpu-0"), std::string::npos);
}

TEST(SpecBuilder, EmptyClaimOrBadUidIsRefused) {
  EXPECT_FALSE(build_claim_spec(kGpuVendor, "uid", {}).ok());
  auto bad = build_claim_spec(kGpuVendor, "a/b", {{"gpu-0", {}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "uid");
}

TEST(SpecBuilder, BaseSpecCarriesDriverEditsAtSpecLevel) {
  ContainerEdits driver;
  driver.env.push_back("NVIDIA_CTK_LIBCUDA_DIR=/usr/lib/x86_64-linux-gnu");
  auto built = build_base_spec(kComputeDomainVendor, kComputeDomainBaseDevice, node("/dev/nvidia0"), driver);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->file_name, "k8s.compute-domain.nvidia.com-device_base.yaml");
  EXPECT_EQ(built->device_ids, std::vector<std::string>{"k8s.compute-domain.nvidia.com/device=all"});
  EXPECT_EQ(*built->spec.edits, driver);
}

TEST(SpecBuilder, DeviceWithoutEditsOfItsOwnIsRefused) {
  // CDI consumers (podman 4.3: "invalid device, empty device edits") reject the whole spec.
  auto built = build_base_spec(kGpuVendor, "driver", {}, node("/dev/nvidiactl"));
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().message.find("\"driver\" has no edits of its own"), std::string::npos)
      << built.error().message;
}

TEST(SpecBuilder, LegacyBaseSpecIsTheFileOlderNvdraWrote) {
  EXPECT_EQ(legacy_gpu_base_spec_file(), "k8s.gpu.nvidia.com-device_base.json");
}

}  // namespace
}  // namespace nvdra::cdi
