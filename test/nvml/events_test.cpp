// Event delivery through the seam: XIDs injected with the mock's test hook, GPU loss, timeouts.
#include <gtest/gtest.h>

#include <chrono>

#include "nvml/discovery.hpp"
#include "nvml/mock/test_hooks.h"
#include "test/nvml/mock_nvml.hpp"

namespace nvdra::nvml {
namespace {

using testing::MockNvml;
using namespace std::chrono_literals;

std::vector<std::string> uuids(const DeviceModel& m) {
  std::vector<std::string> out;
  for (const auto& g : m.gpus) out.push_back(g.uuid);
  return out;
}

TEST(Events, AnInjectedXidOnAMigDeviceReachesTheWatcherWithItsInstanceIds) {
  MockNvml mock("dgx-a100");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  auto watch = lib->watch_events(uuids(m), kEventXidCriticalError | kEventDoubleBitEcc | kEventSingleBitEcc);
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  EXPECT_TRUE((*watch)->unmonitored().empty());
  const MigDeviceInfo& mig = m.gpus[6].mig_devices[1];
  auto inject = mock.hook<decltype(&nvdraMockInjectEvent)>("nvdraMockInjectEvent");
  ASSERT_EQ(inject(mig.uuid.c_str(), kEventXidCriticalError, 79, kNoInstance, kNoInstance), 0);
  auto got = (*watch)->wait(10s);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->kind, WaitOutcome::Kind::kEvent);
  EXPECT_EQ(got->event.gpu_uuid, m.gpus[6].uuid);
  EXPECT_EQ(got->event.data, 79u);
  EXPECT_EQ(got->event.gi_id, mig.gi_id);
  EXPECT_EQ(got->event.ci_id, mig.ci_id);
  EXPECT_EQ(got->event.type, kEventXidCriticalError);
}

TEST(Events, EventsFromBeforeTheWatchAndOnUnwatchedGpusAreNotDelivered) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  auto inject = mock.hook<decltype(&nvdraMockInjectEvent)>("nvdraMockInjectEvent");
  ASSERT_EQ(inject(m.gpus[0].uuid.c_str(), kEventXidCriticalError, 13, kNoInstance, kNoInstance), 0);
  auto watch = lib->watch_events({m.gpus[0].uuid}, kEventXidCriticalError);
  ASSERT_TRUE(watch.ok());
  ASSERT_EQ(inject(m.gpus[1].uuid.c_str(), kEventXidCriticalError, 31, kNoInstance, kNoInstance), 0);
  ASSERT_EQ(inject(m.gpus[0].uuid.c_str(), kEventXidCriticalError, 48, kNoInstance, kNoInstance), 0);
  auto got = (*watch)->wait(10s);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->kind, WaitOutcome::Kind::kEvent);
  EXPECT_EQ(got->event.data, 48u);
  EXPECT_EQ(got->event.gi_id, kNoInstance);
  auto none = (*watch)->wait(1ms);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->kind, WaitOutcome::Kind::kTimeout);
}

TEST(Events, ALostGpuIsReportedToTheWatcherAndFailsItsCalls) {
  MockNvml mock("l4");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  auto watch = lib->watch_events(uuids(m), kEventXidCriticalError);
  ASSERT_TRUE(watch.ok());
  auto set_lost = mock.hook<decltype(&nvdraMockSetGpuLost)>("nvdraMockSetGpuLost");
  ASSERT_EQ(set_lost(m.gpus[0].uuid.c_str(), 1), 0);
  auto got = (*watch)->wait(10s);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->kind, WaitOutcome::Kind::kGpuLost);
  auto again = discover(*lib);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("GPU is lost"), std::string::npos) << again.error().message;
  auto reset = mock.hook<decltype(&nvdraMockResetState)>("nvdraMockResetState");
  ASSERT_EQ(reset(), 0);
  EXPECT_TRUE(discover(*lib).ok());
}

TEST(Events, AGpuThatRefusesRegistrationIsUnmonitoredNamingTheCallAndOthersAreWatched) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  auto set_supported = mock.hook<decltype(&nvdraMockSetEventsSupported)>("nvdraMockSetEventsSupported");
  ASSERT_EQ(set_supported(m.gpus[2].uuid.c_str(), 0), 0);
  auto watch = lib->watch_events(uuids(m), kEventXidCriticalError);
  ASSERT_TRUE(watch.ok());
  ASSERT_EQ((*watch)->unmonitored().size(), 1u);
  EXPECT_EQ((*watch)->unmonitored()[0].first, m.gpus[2].uuid);
  EXPECT_NE((*watch)->unmonitored()[0].second.message.find("nvmlDeviceRegisterEvents"), std::string::npos)
      << (*watch)->unmonitored()[0].second.message;
}

TEST(Events, TheRecoveryActionReadsWhatTheDriverSetsAndNoneByDefault) {
  MockNvml mock("hgx-h100");
  auto lib = mock.open();
  const DeviceModel m = discover(*lib).value();
  auto none = lib->recovery_action(m.gpus[1].uuid);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(*none, std::optional<unsigned>{kRecoveryNone});
  auto set_action = mock.hook<decltype(&nvdraMockSetRecoveryAction)>("nvdraMockSetRecoveryAction");
  ASSERT_EQ(set_action(m.gpus[1].uuid.c_str(), kRecoveryDrainAndReset), 0);
  EXPECT_EQ(*lib->recovery_action(m.gpus[1].uuid), std::optional<unsigned>{kRecoveryDrainAndReset});
  EXPECT_EQ(*lib->recovery_action(m.gpus[0].uuid), std::optional<unsigned>{kRecoveryNone});
  EXPECT_EQ(recovery_action_name(kRecoveryDrainAndReset), "drain-and-reset");
  EXPECT_EQ(recovery_action_name(9), "9");
  EXPECT_FALSE(lib->recovery_action("GPU-no-such").ok());
}

}  // namespace
}  // namespace nvdra::nvml
