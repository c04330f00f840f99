// MIG create/destroy through the seam against the mock, with NVML's placement rules, and the
// mock's state surviving dlclose and spanning processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "nvml/discovery.hpp"
#include "test/nvml/mock_nvml.hpp"

namespace nvdra::nvml {
namespace {

using testing::MockNvml;
constexpr const char* kH100 = "GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e01";
constexpr const char* kA100Mig = "GPU-4a1f0c2e-7d3b-4e5a-9c81-0a2b3c4d5e07";

TEST(MigOperations, HopperEnablesMigCreatesAndDestroysAMigDevice) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  auto change = lib->set_mig_mode(kH100, true);
  ASSERT_TRUE(change.ok()) << change.error().message;
  EXPECT_TRUE(change->active);  // Hopper switches without a reset
  auto created = lib->create_mig_device(kH100, MigDeviceRequest{9, 4, 2, 0});
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(created->canonical_name(), "gpu-0-mig-3g40gb-9-4");
  EXPECT_EQ(created->uuid.rfind("MIG-", 0), 0u);
  auto listed = lib->mig_devices(kH100);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].uuid, created->uuid);
  ASSERT_TRUE(lib->destroy_mig_device(kH100, created->gi_id, created->ci_id).ok());
  EXPECT_TRUE(lib->mig_devices(kH100)->empty());
  EXPECT_TRUE(lib->destroy_mig_device(kH100, created->gi_id, created->ci_id).ok()) << "destroy is idempotent";
  EXPECT_TRUE(lib->set_mig_mode(kH100, false).ok());
}

TEST(MigOperations, AnOccupiedOrImpossiblePlacementFailsAsNvmlDoes) {
  MockNvml mock("dgx-a100");
  auto lib = mock.open();
  auto occupied = lib->create_mig_device(kA100Mig, MigDeviceRequest{14, 0, 1, 0});  // 3g.20gb sits at 0
  ASSERT_FALSE(occupied.ok());
  EXPECT_EQ(occupied.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(occupied.error().message.find("nvmlDeviceCreateGpuInstanceWithPlacement"), std::string::npos);
  EXPECT_NE(occupied.error().message.find("Insufficient Resources"), std::string::npos) << occupied.error().message;
  auto impossible = lib->create_mig_device(kA100Mig, MigDeviceRequest{9, 2, 2, 0});
  ASSERT_FALSE(impossible.ok());
  EXPECT_EQ(impossible.error().code, ErrorCode::kInvalidArgument);
  auto mig_off = lib->create_mig_device("GPU-4a1f0c2e-7d3b-4e5a-9c81-0a2b3c4d5e01", MigDeviceRequest{19, 0, 0, 0});
  ASSERT_FALSE(mig_off.ok());
  EXPECT_NE(mig_off.error().message.find("Not Supported"), std::string::npos) << mig_off.error().message;
}

TEST(MigOperations, MigCannotBeDisabledWhileInstancesExist) {
  MockNvml mock("dgx-a100");
  auto lib = mock.open();
  auto r = lib->set_mig_mode(kA100Mig, false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("In use by another client"), std::string::npos) << r.error().message;
}

TEST(MigOperations, StateSurvivesDlcloseLikeARealGpu) {
  MockNvml mock("hgx-h100");
  std::string uuid;
  {
    auto lib = mock.open();
    ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
    auto created = lib->create_mig_device(kH100, MigDeviceRequest{19, 3, 0, 0});
    ASSERT_TRUE(created.ok()) << created.error().message;
    uuid = created->uuid;
  }  // nvmlShutdown + dlclose
  auto lib = mock.open();
  auto listed = lib->mig_devices(kH100);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].uuid, uuid);
  EXPECT_EQ((*listed)[0].canonical_name(), "gpu-0-mig-1g10gb-19-3");
}

TEST(MigOperations, AChangeMadeByAnotherProcessIsSeenWithoutReloading) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Another process: same profile, same state file.
    auto other = open_nvml(LoadOptions{MockNvml::library_path(), "/"});
    const bool ok = other.ok() && (*other)->create_mig_device(kH100, MigDeviceRequest{14, 2, 1, 0}).ok();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto listed = lib->mig_devices(kH100);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].canonical_name(), "gpu-0-mig-2g20gb-14-2");
}

TEST(MigOperations, ConcurrentDiscoveryAndMigChangesAllSucceed) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  ASSERT_TRUE(lib->set_mig_mode(kH100, true).ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i)
        if (!discover(*lib).ok()) ++failures;
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 10; ++i) {
      auto m = lib->create_mig_device(kH100, MigDeviceRequest{19, 0, 0, 0});
      if (!m.ok() || !lib->destroy_mig_device(kH100, m->gi_id, m->ci_id).ok()) ++failures;
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace nvdra::nvml
