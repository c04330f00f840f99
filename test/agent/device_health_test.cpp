// DeviceHealth, the pure state behind NVMLDeviceHealthCheck: which devices an NVML event reaches,
// upstream's taints and effects, the health the stream and nvdractl show, and each recovery policy.
#include "agent/drivers/device_health.hpp"

#include <gtest/gtest.h>

using namespace nvdra;
using namespace nvdra::drivers;
using config::HealthRecovery;

namespace {

const std::string kGpu0 = "GPU-0", kGpu1 = "GPU-1";

// gpu-0 with two static MIG devices (GI 1/CI 0 and GI 2/CI 0); gpu-1 a full GPU.
std::vector<HealthTarget> targets() {
  return {{"gpu-0-mig-a", kGpu0, 1, 0}, {"gpu-0-mig-b", kGpu0, 2, 0}, {"gpu-1", kGpu1}};
}

nvml::GpuEvent xid(const std::string& gpu, uint64_t n, unsigned gi = nvml::kNoInstance, unsigned ci = nvml::kNoInstance) {
  return {gpu, nvml::kEventXidCriticalError, n, gi, ci};
}

DeviceHealth make(HealthRecovery recovery = HealthRecovery::kRecoveryAction, std::vector<uint32_t> ignore = {}) {
  return DeviceHealth("node-a", targets(), XidPolicy::upstream(ignore, recovery));
}

std::map<std::string, kubelet::Health> health(const DeviceHealth& h) {
  std::map<std::string, kubelet::Health> out;
  for (const auto& d : h.report()) out[d.device_name] = d.health;
  return out;
}

}  // namespace

TEST(DeviceHealth, AnXidOnAGpuReachesEveryDeviceOfItAndOneOnAnInstanceOnlyThatOne) {
  auto h = make();
  EXPECT_TRUE(h.event(xid(kGpu0, 79, 2, 0), 10));
  EXPECT_TRUE(h.taints("gpu-0-mig-a").empty());
  EXPECT_EQ(h.taints("gpu-0-mig-b"), (std::vector<DeviceTaint>{{kTaintXid, "79", "NoSchedule"}}));
  EXPECT_TRUE(h.event(xid(kGpu0, 48), 11));
  EXPECT_EQ(h.taints("gpu-0-mig-a"), (std::vector<DeviceTaint>{{kTaintXid, "48", "NoSchedule"}}));
  EXPECT_TRUE(h.taints("gpu-1").empty());
  EXPECT_FALSE(h.event(xid(kGpu0, 48), 12)) << "the same taint again is no change";
}

TEST(DeviceHealth, IgnoredXidsGetEffectNoneAndStayHealthyEccEventsTaintNothing) {
  auto h = make(HealthRecovery::kRecoveryAction, {94});
  EXPECT_TRUE(h.event(xid(kGpu1, 13), 1));
  EXPECT_EQ(h.taints("gpu-1"), (std::vector<DeviceTaint>{{kTaintXid, "13", "None"}}));
  EXPECT_TRUE(h.event(xid(kGpu1, 94), 2));
  EXPECT_EQ(h.taints("gpu-1")[0].effect, "None");
  EXPECT_EQ(health(h)["gpu-1"], kubelet::Health::kHealthy);
  EXPECT_FALSE(h.event({kGpu0, nvml::kEventDoubleBitEcc, 0}, 3));
  EXPECT_TRUE(h.event(xid(kGpu1, 95), 4));
  EXPECT_EQ(health(h)["gpu-1"], kubelet::Health::kUnhealthy);
}

TEST(DeviceHealth, UnmonitoredIsUnknownAndALostGpuTaintsEveryDevice) {
  auto h = make();
  EXPECT_TRUE(h.unmonitored(kGpu1, 1));
  EXPECT_EQ(health(h)["gpu-1"], kubelet::Health::kUnknown);
  EXPECT_TRUE(h.lost(2));
  for (const auto& [name, state] : health(h)) EXPECT_EQ(state, kubelet::Health::kUnhealthy) << name;
  systemd_bus::DeviceStatus row{"gpu.nvidia.com", "gpu-1"};
  h.fill(row);
  EXPECT_EQ(row.health, systemd_bus::kHealthUnhealthy);
}

TEST(DeviceHealth, ResetRemovesLostAndXidTaintsButKeepsUnmonitored) {
  auto h = make(HealthRecovery::kReset);
  h.unmonitored(kGpu1, 1);
  h.event(xid(kGpu1, 79), 2);
  h.lost(3);
  EXPECT_EQ(h.served(4), (std::vector<std::string>{kGpu0, kGpu1}));
  EXPECT_EQ(h.taints("gpu-1"), (std::vector<DeviceTaint>{{kTaintUnmonitored, "", "None"}}));
  EXPECT_TRUE(h.taints("gpu-0-mig-a").empty());
  EXPECT_TRUE(h.served(5).empty()) << "nothing was lost since";
}

TEST(DeviceHealth, RecoveryNoneKeepsEveryTaintAsUpstream) {
  auto h = make(HealthRecovery::kNone);
  h.event(xid(kGpu1, 48), 1, nvml::kRecoveryGpuReset);
  EXPECT_TRUE(h.awaiting_recovery().empty());
  h.lost(2);
  EXPECT_TRUE(h.served(3).empty());
  EXPECT_EQ(h.taints("gpu-1").size(), 2u);
}

TEST(DeviceHealth, AnXidIsClearedOnceItsInPlaceRecoveryActionReadsNone) {
  auto h = make();
  h.event(xid(kGpu1, 48), 1, nvml::kRecoveryDrainP2p);
  EXPECT_EQ(h.awaiting_recovery(), std::vector<std::string>{kGpu1});
  EXPECT_FALSE(h.recovery_action(kGpu1, nvml::kRecoveryGpuReset, 2)) << "drain done, reset pending";
  EXPECT_EQ(h.awaiting_recovery(), std::vector<std::string>{kGpu1});
  EXPECT_TRUE(h.recovery_action(kGpu1, nvml::kRecoveryNone, 3));
  EXPECT_TRUE(h.taints("gpu-1").empty());
  EXPECT_TRUE(h.awaiting_recovery().empty());
  EXPECT_FALSE(h.recovery_action(kGpu1, nvml::kRecoveryNone, 4)) << "not awaited any more";
}

TEST(DeviceHealth, RebootNoneOrUnknownActionsAreNotAwaitedAndALaterRebootCancelsAReset) {
  auto h = make();
  h.event(xid(kGpu1, 79), 1, nvml::kRecoveryNodeReboot);
  h.event(xid(kGpu0, 13), 1, nvml::kRecoveryNone);
  EXPECT_TRUE(h.awaiting_recovery().empty());
  h.event(xid(kGpu0, 31), 2);  // NVML could not say
  EXPECT_TRUE(h.awaiting_recovery().empty());
  h.event(xid(kGpu0, 48), 3, nvml::kRecoveryGpuReset);
  h.event(xid(kGpu0, 79), 4, nvml::kRecoveryNodeReboot);
  EXPECT_TRUE(h.awaiting_recovery().empty());
  h.event(xid(kGpu1, 48), 5, nvml::kRecoveryGpuReset);
  EXPECT_FALSE(h.recovery_action(kGpu1, nvml::kRecoveryNodeReboot, 6)) << "escalated: no longer observable";
  EXPECT_TRUE(h.awaiting_recovery().empty());
  EXPECT_EQ(h.taints("gpu-1").size(), 1u);
}

TEST(DeviceHealth, StatusRowCarriesTheLastXidAndWhenInUtc) {
  auto h = make();
  h.event(xid(kGpu1, 79), 1795000000);
  systemd_bus::DeviceStatus row{"gpu.nvidia.com", "gpu-1"};
  h.fill(row);
  EXPECT_EQ(row.health, systemd_bus::kHealthUnhealthy);
  EXPECT_EQ(row.last_xid, "79");
  EXPECT_EQ(row.last_xid_time, "2026-11-18T11:06:40Z");
  systemd_bus::DeviceStatus other{"gpu.nvidia.com", "vfio-0"};
  h.fill(other);
  EXPECT_EQ(other.health, "") << "a device no GPU stands behind is left as it was";
}
