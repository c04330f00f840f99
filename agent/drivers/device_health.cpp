#include "agent/drivers/device_health.hpp"

#include <ctime>

namespace nvdra::drivers {
namespace {

const std::string* string_attr(const PublishedDevice& d, const char* name) {
  auto it = d.attributes.find(name);
  return it == d.attributes.end() ? nullptr : std::get_if<std::string>(&it->second);
}

std::string utc(int64_t t) {
  char buf[32] = {};
  std::tm tm{};
  const auto tt = static_cast<std::time_t>(t);
  gmtime_r(&tt, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

XidPolicy XidPolicy::upstream(const std::vector<uint32_t>& additional, config::HealthRecovery recovery) {
  XidPolicy p{{13, 31, 43, 45, 68, 109}, recovery};
  p.ignored.insert(additional.begin(), additional.end());
  return p;
}

// Actions the GPU recovers from in place, so their completion can be observed while we run.
static bool recoverable_in_place(unsigned action) {
  return action == nvml::kRecoveryGpuReset || action == nvml::kRecoveryDrainP2p ||
         action == nvml::kRecoveryDrainAndReset;
}

std::vector<HealthTarget> health_targets(const std::vector<PublishedDevice>& devices, const nvml::DeviceModel& model) {
  std::vector<HealthTarget> out;
  for (const auto& d : devices) {
    const std::string* uuid = string_attr(d, "uuid");
    const std::string* parent = string_attr(d, "parentUUID");
    HealthTarget t{d.name, {}};
    for (const auto& g : model.gpus) {
      if (uuid && *uuid == g.uuid) t.gpu_uuid = g.uuid;
      for (const auto& m : g.mig_devices)
        if (uuid && *uuid == m.uuid) t = HealthTarget{d.name, g.uuid, m.gi_id, m.ci_id};
    }
    if (t.gpu_uuid.empty() && parent) t.gpu_uuid = *parent;  // DynamicMIG: the parent's health
    if (!t.gpu_uuid.empty()) out.push_back(std::move(t));
  }
  return out;
}

DeviceHealth::DeviceHealth(std::string pool, std::vector<HealthTarget> targets, XidPolicy policy)
    : pool_(std::move(pool)), targets_(std::move(targets)), policy_(std::move(policy)) {
  for (const auto& t : targets_) state_[t.name];
}

bool DeviceHealth::set(const std::string& device, DeviceTaint taint, int64_t now) {
  auto& s = state_[device];
  auto& slot = s.taints[taint.key];
  if (slot == taint) return false;
  slot = std::move(taint);
  s.updated = now;
  return true;
}

bool DeviceHealth::unmonitored(const std::string& gpu_uuid, int64_t now) {
  bool changed = false;
  for (const auto& t : targets_)
    if (t.gpu_uuid == gpu_uuid) changed |= set(t.name, {kTaintUnmonitored, "", "None"}, now);
  return changed;
}

bool DeviceHealth::event(const nvml::GpuEvent& e, int64_t now, std::optional<unsigned> action) {
  // Upstream acts on XidCriticalError only; ECC events are registered (its mask) but not tainted.
  if (e.type != nvml::kEventXidCriticalError) return false;
  if (policy_.recovery == config::HealthRecovery::kRecoveryAction) {
    // The latest XID decides: one NVML wants a reboot for cancels an earlier resettable one.
    if (action && recoverable_in_place(*action)) awaiting_[e.gpu_uuid] = *action;
    else awaiting_.erase(e.gpu_uuid);
  }
  const bool one_instance = e.gi_id != nvml::kNoInstance;
  bool changed = false;
  for (const auto& t : targets_) {
    if (t.gpu_uuid != e.gpu_uuid) continue;
    if (one_instance && (t.gi_id != e.gi_id || (e.ci_id != nvml::kNoInstance && t.ci_id != e.ci_id))) continue;
    changed |= set(t.name, {kTaintXid, std::to_string(e.data), policy_.ignored_xid(e.data) ? "None" : "NoSchedule"},
                   now);
    auto& s = state_[t.name];
    s.last_xid = e.data;
    s.last_xid_at = now;
  }
  return changed;
}

bool DeviceHealth::lost(int64_t now) {
  // NVML does not say which GPU: upstream marks every device.
  bool changed = false;
  for (const auto& t : targets_) {
    changed |= set(t.name, {kTaintGpuLost, "", "NoSchedule"}, now);
    lost_gpus_.insert(t.gpu_uuid);
  }
  any_lost_ = true;
  return changed;
}

std::vector<std::string> DeviceHealth::served(int64_t now) {
  if (!any_lost_ || policy_.recovery == config::HealthRecovery::kNone) return {};
  any_lost_ = false;
  std::set<std::string> recovered;
  for (const auto& t : targets_) {
    if (!lost_gpus_.count(t.gpu_uuid)) continue;
    auto& s = state_[t.name];
    // The GPU came back (reset): its gpu-lost and xid taints go; unmonitored stays.
    if (s.taints.erase(kTaintGpuLost) + s.taints.erase(kTaintXid) > 0) {
      s.updated = now;
      recovered.insert(t.gpu_uuid);
    }
  }
  for (const auto& g : lost_gpus_) awaiting_.erase(g);
  lost_gpus_.clear();
  return {recovered.begin(), recovered.end()};
}

std::vector<std::string> DeviceHealth::awaiting_recovery() const {
  std::vector<std::string> out;
  for (const auto& [gpu, action] : awaiting_) out.push_back(gpu);
  return out;
}

bool DeviceHealth::recovery_action(const std::string& gpu_uuid, unsigned action, int64_t now) {
  auto it = awaiting_.find(gpu_uuid);
  if (it == awaiting_.end()) return false;
  if (action != nvml::kRecoveryNone) {
    // Drain P2P turns into the action that follows it; a reboot cannot be observed from here.
    if (recoverable_in_place(action)) it->second = action;
    else awaiting_.erase(it);
    return false;
  }
  awaiting_.erase(it);
  bool changed = false;
  for (const auto& t : targets_) {
    if (t.gpu_uuid != gpu_uuid) continue;
    auto& s = state_[t.name];
    if (s.taints.erase(kTaintXid) > 0) {
      s.updated = now;
      changed = true;
    }
  }
  return changed;
}

std::vector<DeviceTaint> DeviceHealth::taints(const std::string& device) const {
  std::vector<DeviceTaint> out;
  auto it = state_.find(device);
  if (it == state_.end()) return out;
  for (const auto& [key, t] : it->second.taints) out.push_back(t);
  return out;
}

std::vector<kubelet::DeviceHealth> DeviceHealth::report() const {
  std::vector<kubelet::DeviceHealth> out;
  for (const auto& t : targets_) {
    const auto& s = state_.at(t.name);
    kubelet::DeviceHealth h{pool_, t.name, kubelet::Health::kHealthy, s.updated, kHealthTimeoutSeconds, ""};
    for (const auto& [key, taint] : s.taints) {
      if (taint.effect == "NoSchedule") h.health = kubelet::Health::kUnhealthy;
      else if (key == kTaintUnmonitored && h.health == kubelet::Health::kHealthy) h.health = kubelet::Health::kUnknown;
      h.message += (h.message.empty() ? "" : "; ") + key + (taint.value.empty() ? "" : "=" + taint.value);
    }
    out.push_back(std::move(h));
  }
  return out;
}

void DeviceHealth::fill(systemd_bus::DeviceStatus& row) const {
  auto it = state_.find(row.name);
  if (it == state_.end()) return;  // not watched (no GPU behind it): stays unknown
  const auto& s = it->second;
  row.health = systemd_bus::kHealthHealthy;
  for (const auto& [key, taint] : s.taints) {
    if (taint.effect == "NoSchedule") row.health = systemd_bus::kHealthUnhealthy;
    else if (key == kTaintUnmonitored && row.health == systemd_bus::kHealthHealthy)
      row.health = systemd_bus::kHealthUnknown;
  }
  if (s.last_xid != 0) {
    row.last_xid = std::to_string(s.last_xid);
    row.last_xid_time = utc(s.last_xid_at);
  }
}

}  // namespace nvdra::drivers
