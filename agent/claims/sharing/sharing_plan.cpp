#include "agent/claims/sharing/sharing_plan.hpp"

#include <algorithm>
#include <charconv>

#include "agent/claims/config/config_quantity.hpp"

namespace nvdra::claims {
namespace {

Error invalid(std::string message, std::string field) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}, std::move(field)};
}

// Returns "<MiB>M", or the error upstream gives for a limit that rounds to nothing.
Result<std::string> limit_text(const std::string& quantity, const std::string& too_low, const std::string& field) {
  auto q = parse_quantity(quantity);
  if (!q) return invalid(q.error().message, field);
  auto mib = whole_mebibytes(*q);
  if (!mib) return invalid(mib.error().message, field);
  if (*mib <= 0) return invalid(too_low, field);
  return std::to_string(*mib) + "M";
}

Result<MpsPlan> plan_mps(const std::optional<MpsConfig>& mps, std::vector<std::string> uuids) {
  MpsPlan plan;
  if (!mps) return plan;
  plan.active_thread_percentage = mps->default_active_thread_percentage;
  plan.multi_user = mps->multi_user;
  auto limits = mps_pinned_limits(*mps, std::move(uuids));
  if (!limits) return std::move(limits).error();
  plan.pinned_limits = std::move(*limits);
  return plan;
}

}  // namespace

Result<int> time_slice_value(std::string_view interval) {
  constexpr std::string_view kNames[] = {"Default", "Short", "Medium", "Long"};
  for (int i = 0; i < 4; ++i)
    if (kNames[i] == interval) return i;
  return invalid("unknown time-slice interval: " + std::string(interval) +
                     ", supported time-slice intervals: Default, Short, Medium, Long",
                 "sharing.timeSlicingConfig.interval");
}

Result<std::map<std::string, std::string>> mps_pinned_limits(const MpsConfig& mps, std::vector<std::string> uuids) {
  std::sort(uuids.begin(), uuids.end());
  std::map<std::string, std::string> out;
  if (mps.default_pinned_device_memory_limit) {
    const auto& q = *mps.default_pinned_device_memory_limit;
    auto text = limit_text(q, "invalid limit: default value set too low: " + q,
                           "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit");
    if (!text) return std::move(text).error();
    for (const auto& u : uuids) out[u] = *text;
  }
  for (const auto& [key, q] : mps.default_per_device_pinned_memory_limit) {
    const std::string field = "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit." + key;
    std::string uuid = key;
    if (std::find(uuids.begin(), uuids.end(), key) == uuids.end()) {
      long long index = -1;
      auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
      if (ec != std::errc() || p != key.data() + key.size())
        return invalid("invalid device: unable to parse key as an integer: " + key + " (keys are UUIDs of the group or indices 0.." +
                           std::to_string(uuids.empty() ? 0 : uuids.size() - 1) + " into its sorted UUIDs)",
                       field);
      if (index < 0 || static_cast<std::size_t>(index) >= uuids.size())
        return invalid("invalid device: invalid device index: " + std::to_string(index), field);
      uuid = uuids[static_cast<std::size_t>(index)];
    }
    auto text = limit_text(q, "invalid limit: value set too low: " + key + ": " + q, field);
    if (!text) return std::move(text).error();
    out[uuid] = *text;
  }
  return out;
}

Result<SharingPlan> plan_sharing(const OpaqueConfig& config, std::vector<std::string> group_uuids) {
  SharingPlan plan;
  if (const auto* gpu = std::get_if<GpuConfig>(&config); gpu && gpu->sharing) {
    const auto& s = *gpu->sharing;
    if (s.strategy == "TimeSlicing") {
      if (s.mps_config) return invalid("cannot use MpsConfig with the 'TimeSlicing' strategy", "sharing.mpsConfig");
      auto v = time_slice_value(s.time_slicing_config && s.time_slicing_config->interval ? *s.time_slicing_config->interval
                                                                                          : "Default");
      if (!v) return std::move(v).error();
      plan.kind = SharingKind::kTimeSlicing;
      plan.time_slice = *v;
    } else if (s.strategy == "MPS") {
      if (s.time_slicing_config)
        return invalid("cannot use TimeSlicingConfig with the 'MPS' strategy", "sharing.timeSlicingConfig");
      auto mps = plan_mps(s.mps_config, std::move(group_uuids));
      if (!mps) return std::move(mps).error();
      plan.kind = SharingKind::kMps;
      plan.mps = std::move(*mps);
    }
  } else if (const auto* mig = std::get_if<MigDeviceConfig>(&config); mig && mig->sharing &&
                                                                       mig->sharing->strategy == "MPS") {
    auto mps = plan_mps(mig->sharing->mps_config, std::move(group_uuids));
    if (!mps) return std::move(mps).error();
    plan.kind = SharingKind::kMps;
    plan.mps = std::move(*mps);
  }
  return plan;
}

}  // namespace nvdra::claims
