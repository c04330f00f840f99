// The mock's failure injection (test_hooks.h nvdraMockFailNext) and its MIG caps files, as the
// dynamic-MIG prepare path meets them: a failed create leaves nothing behind, a busy GPU refuses
// to destroy until it is idle, and every instance has its /proc caps "access" files.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/nvml/mock_nvml.hpp"

namespace nvdra::nvml {
namespace {

using testing::MockNvml;
using FailNext = int (*)(const char*, int, unsigned);
constexpr const char* kH100 = "GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e01";
constexpr int kInsufficientResources = 23, kInUse = 19;

TEST(MigFaults, InjectedInsufficientResourcesFailsTheCreateAndLeavesNoInstance) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
  auto fail = mock.hook<FailNext>("nvdraMockFailNext");
  ASSERT_EQ(fail("nvmlGpuInstanceCreateComputeInstance", kInsufficientResources, 1), 0);
  auto created = lib->create_mig_device(kH100, MigDeviceRequest{19, 3, 0, 0});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(created.error().message.find("nvmlGpuInstanceCreateComputeInstance"), std::string::npos);
  EXPECT_TRUE(lib->mig_devices(kH100)->empty()) << "the GPU instance is destroyed again";
  // Consumed: the next create succeeds at the same placement.
  EXPECT_TRUE(lib->create_mig_device(kH100, MigDeviceRequest{19, 3, 0, 0}).ok());
  mock.close_hooks();
}

TEST(MigFaults, ABusyGpuRefusesToDestroyUntilIdle) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
  auto created = lib->create_mig_device(kH100, MigDeviceRequest{14, 2, 1, 0});
  ASSERT_TRUE(created.ok()) << created.error().message;
  auto fail = mock.hook<FailNext>("nvdraMockFailNext");
  ASSERT_EQ(fail("nvmlComputeInstanceDestroy", kInUse, 1), 0);
  auto busy = lib->destroy_mig_device(kH100, created->gi_id, created->ci_id);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(busy.error().message.find("In use by another client"), std::string::npos) << busy.error().message;
  EXPECT_EQ(lib->mig_devices(kH100)->size(), 1u);
  EXPECT_TRUE(lib->destroy_mig_device(kH100, created->gi_id, created->ci_id).ok());
  EXPECT_TRUE(lib->mig_devices(kH100)->empty());
  ASSERT_EQ(fail("nvmlDeviceSetMigMode", kInUse, 1), 0);
  EXPECT_FALSE(lib->set_mig_mode(kH100, false).ok());
  EXPECT_TRUE(lib->set_mig_mode(kH100, false).ok());
  mock.close_hooks();
}

TEST(MigFaults, MixedProfilesFitUntilMemorySlicesOverlap) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
  // 4g at 0 (slices 0-3) + 2g at 4 (4-5) + 1g.20gb at 6 (6-7): a full GPU.
  ASSERT_TRUE(lib->create_mig_device(kH100, MigDeviceRequest{5, 0, 3, 0}).ok());
  ASSERT_TRUE(lib->create_mig_device(kH100, MigDeviceRequest{14, 4, 1, 0}).ok());
  ASSERT_TRUE(lib->create_mig_device(kH100, MigDeviceRequest{15, 6, 0, 0}).ok());
  auto full = lib->create_mig_device(kH100, MigDeviceRequest{19, 6, 0, 0});
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("Insufficient Resources"), std::string::npos) << full.error().message;
  EXPECT_EQ(lib->mig_devices(kH100)->size(), 3u);
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MigFaults, CapsAccessFilesFollowTheInstances) {
  MockNvml mock("hgx-h100");
  const std::string root = mock.dir() + "/host";
  ::setenv("NVDRA_MOCK_HOST_ROOT", root.c_str(), 1);
  {
    auto lib = mock.open();
    ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
    auto created = lib->create_mig_device(kH100, MigDeviceRequest{9, 4, 2, 0});
    ASSERT_TRUE(created.ok()) << created.error().message;
    const auto gi = std::filesystem::path(root) / "proc/driver/nvidia/capabilities/gpu0/mig" /
                    ("gi" + std::to_string(created->gi_id));
    EXPECT_NE(read(gi / "access").find("DeviceFileMinor: " + std::to_string(3 + created->gi_id * 9)), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(gi / ("ci" + std::to_string(created->ci_id)) / "access"));
    ASSERT_TRUE(lib->destroy_mig_device(kH100, created->gi_id, created->ci_id).ok());
    EXPECT_FALSE(std::filesystem::exists(gi));
  }
  ::unsetenv("NVDRA_MOCK_HOST_ROOT");
}

}  // namespace
}  // namespace nvdra::nvml
