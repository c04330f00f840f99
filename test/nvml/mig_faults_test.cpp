// The mock's failure injection (test_hooks.h nvdraMockFailNext) and its MIG caps files, as the
// dynamic-MIG prepare path meets them: a failed create leaves nothing behind, a busy GPU refuses
// to destroy until it is idle, a GPU instance left without compute instance is listed and
// destroyed, and every instance has its /proc caps "access" files.
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

// The create's own clean-up of the GI is refused too: a GPU instance without compute instance
// stays, as when the agent is killed between the two create calls.
TEST(MigFaults, AGpuInstanceLeftWithoutComputeInstanceIsListedAndDestroyedById) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
  ASSERT_TRUE(lib->create_mig_device(kH100, MigDeviceRequest{9, 0, 2, 0}).ok()) << "a whole MIG device";
  EXPECT_TRUE(lib->bare_gpu_instances(kH100)->empty()) << "a GI with its CI is not bare";
  auto fail = mock.hook<FailNext>("nvdraMockFailNext");
  ASSERT_EQ(fail("nvmlGpuInstanceCreateComputeInstance", kInsufficientResources, 1), 0);
  ASSERT_EQ(fail("nvmlGpuInstanceDestroy", kInUse, 1), 0);
  ASSERT_FALSE(lib->create_mig_device(kH100, MigDeviceRequest{19, 5, 0, 0}).ok());
  EXPECT_EQ(lib->mig_devices(kH100)->size(), 1u) << "the bare GI is no MIG device";
  auto again = lib->create_mig_device(kH100, MigDeviceRequest{19, 5, 0, 0});
  ASSERT_FALSE(again.ok()) << "the bare GI holds the placement";
  EXPECT_NE(again.error().message.find("Insufficient Resources"), std::string::npos) << again.error().message;

  auto bare = lib->bare_gpu_instances(kH100);
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  ASSERT_EQ(bare->size(), 1u);
  EXPECT_EQ(bare->at(0).gi_profile_id, 19u);
  EXPECT_EQ(bare->at(0).placement, (MigPlacement{5, 1}));
  EXPECT_FALSE(lib->set_mig_mode(kH100, false).ok()) << "MIG mode cannot go off while the GI exists";

  ASSERT_TRUE(lib->destroy_gpu_instance(kH100, bare->at(0).gi_id).ok());
  EXPECT_TRUE(lib->bare_gpu_instances(kH100)->empty());
  EXPECT_TRUE(lib->destroy_gpu_instance(kH100, bare->at(0).gi_id).ok()) << "already gone counts as success";
  EXPECT_TRUE(lib->create_mig_device(kH100, MigDeviceRequest{19, 5, 0, 0}).ok()) << "the placement is free again";
  EXPECT_TRUE(lib->bare_gpu_instances(kH100)->empty());
  EXPECT_EQ(lib->mig_devices(kH100)->size(), 2u);
  mock.close_hooks();
}

TEST(MigFaults, WithMigModeOffThereAreNoBareGpuInstancesAndDestroyIsANoOp) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  auto bare = lib->bare_gpu_instances(kH100);
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_TRUE(bare->empty());
  EXPECT_TRUE(lib->destroy_gpu_instance(kH100, 1).ok());
  EXPECT_EQ(lib->destroy_gpu_instance("GPU-00000000-0000-0000-0000-000000000000", 1).error().code,
            ErrorCode::kNotFound);
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
