#pragma once
// DeviceHealth — what NVML events mean for the devices gpu.nvidia.com publishes: upstream's taints
// (upstream-driver.md §11: gpu.nvidia.com/xid, gpu-lost, unmonitored) plus nvdra's recovery, and
// the per-device health the DRA health stream and nvdractl show. Pure state, no I/O; the
// DeviceHealthMonitor feeds it and publishes what it says.
//
// Recovery policy (--device-health-recovery; upstream never removes a taint until restart):
//  * reset: a GPU that NVML serves again after it was lost has been reset, which clears its XID
//    state, so its devices lose their gpu-lost and xid taints;
//  * recovery-action (default), beside reset: an XID whose recovery action NVML gave as GPU reset,
//    drain P2P or drain-and-reset is cleared once NVML reports the action as none again (the
//    action was carried out). XIDs NVML wants a node reboot for, or names no action for, stay.
//  * none: upstream's behaviour.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/base/device.hpp"
#include "agent/config/options.hpp"
#include "agent/kubelet/health_source.hpp"
#include "agent/systemd_bus/status_snapshot.hpp"
#include "nvml/device_model.hpp"
#include "nvml/gpu_library.hpp"

namespace nvdra::drivers {

inline constexpr const char* kTaintXid = "gpu.nvidia.com/xid";
inline constexpr const char* kTaintGpuLost = "gpu.nvidia.com/gpu-lost";
inline constexpr const char* kTaintUnmonitored = "gpu.nvidia.com/unmonitored";
// Upstream's event mask: XidCriticalError | DoubleBitEccError | SingleBitEccError.
inline constexpr uint64_t kHealthEventMask =
    nvml::kEventXidCriticalError | nvml::kEventDoubleBitEcc | nvml::kEventSingleBitEcc;
// The staleness timeout sent to kubelet: its own default, so a missed resend never flaps a device.
inline constexpr int64_t kHealthTimeoutSeconds = 30;

// Upstream's non-fatal XIDs (13, 31, 43, 45, 68, 109) plus --additional-xids-to-ignore: still
// tainted, with effect None instead of NoSchedule.
struct XidPolicy {
  std::set<uint64_t> ignored;
  config::HealthRecovery recovery = config::HealthRecovery::kRecoveryAction;
  static XidPolicy upstream(const std::vector<uint32_t>& additional,
                            config::HealthRecovery recovery = config::HealthRecovery::kRecoveryAction);
  bool ignored_xid(uint64_t xid) const { return ignored.count(xid) != 0; }
};

// A published device and the NVML identity whose events reach it. MIG devices carry their parent
// GPU; static MIG devices also their GI/CI ids (an event naming an instance reaches only that one).
struct HealthTarget {
  std::string name;
  std::string gpu_uuid;
  unsigned gi_id = nvml::kNoInstance;
  unsigned ci_id = nvml::kNoInstance;
};

// From the devices published: "uuid" names a full GPU or a MIG device of `model`, "parentUUID" a
// DynamicMIG device's GPU.
std::vector<HealthTarget> health_targets(const std::vector<PublishedDevice>& devices, const nvml::DeviceModel& model);

class DeviceHealth {
 public:
  DeviceHealth(std::string pool, std::vector<HealthTarget> targets, XidPolicy policy);

  // Each returns whether any device's taints or health changed. `now` in unix seconds.
  bool unmonitored(const std::string& gpu_uuid, int64_t now);
  // `action`: the GPU's recovery action read right after the event (nullopt: NVML cannot say).
  bool event(const nvml::GpuEvent& e, int64_t now, std::optional<unsigned> action = std::nullopt);
  bool lost(int64_t now);
  // NVML answered a wait without GPU_IS_LOST: lost GPUs came back. Returns the GPUs whose taints
  // went (empty under recovery none).
  std::vector<std::string> served(int64_t now);
  // GPUs with an XID whose recovery action is still to be carried out: the monitor reads their
  // action again and reports it here; kRecoveryNone clears their xid taints (returns true then).
  std::vector<std::string> awaiting_recovery() const;
  bool recovery_action(const std::string& gpu_uuid, unsigned action, int64_t now);

  std::vector<DeviceTaint> taints(const std::string& device) const;
  std::vector<kubelet::DeviceHealth> report() const;
  config::HealthRecovery recovery() const { return policy_.recovery; }
  // The status row's health ("healthy" | "unhealthy" | "unknown"), last XID and when.
  void fill(systemd_bus::DeviceStatus& row) const;

 private:
  struct State {
    std::map<std::string, DeviceTaint> taints;  // by key: one per key, a newer event overwrites
    int64_t updated = 0;
    uint64_t last_xid = 0;
    int64_t last_xid_at = 0;
  };
  bool set(const std::string& device, DeviceTaint taint, int64_t now);
  std::string pool_;
  std::vector<HealthTarget> targets_;
  XidPolicy policy_;
  std::map<std::string, State> state_;
  std::set<std::string> lost_gpus_;  // GPUs whose devices carry gpu-lost
  bool any_lost_ = false;
  std::map<std::string, unsigned> awaiting_;  // GPU -> the recovery action NVML last named for it
};

}  // namespace nvdra::drivers
