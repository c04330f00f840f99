#pragma once
// What a device group's normalized config asks the sharing step to do (reference §4.1–4.2):
// the nvidia-smi time-slice value, or the MPS control daemon's limits in the form its control
// commands take. Pure; the pipeline runs the helper programs.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::claims {

enum class SharingKind { kExclusive, kTimeSlicing, kMps };

struct MpsPlan {
  std::optional<int64_t> active_thread_percentage;  // set_default_active_thread_percentage <N>
  std::map<std::string, std::string> pinned_limits;  // UUID → "<MiB>M" (set_default_device_pinned_mem_limit)
  bool multi_user = false;                           // nvidia-cuda-mps-control -d -M
};

struct SharingPlan {
  SharingKind kind = SharingKind::kExclusive;
  int time_slice = 0;  // --set-timeslice value: Default 0, Short 1, Medium 2, Long 3
  MpsPlan mps;
};

// Default→0, Short→1, Medium→2, Long→3; anything else is the upstream "unknown time-slice interval" error.
Result<int> time_slice_value(std::string_view interval);

// Upstream MpsPerDevicePinnedMemoryLimit.Normalize over the group's UUIDs (sorted here): the default
// applies to every UUID, per-device entries (UUID or index into the sorted list) override.
Result<std::map<std::string, std::string>> mps_pinned_limits(const MpsConfig& mps, std::vector<std::string> uuids);

// The plan for a normalized, validated GpuConfig or MigDeviceConfig and the UUIDs of its group
// (GPU and MIG UUIDs). Apply-time errors are upstream's, e.g. "cannot use MpsConfig with the
// 'TimeSlicing' strategy". Time-slicing on MIG validates upstream but does nothing: kExclusive.
Result<SharingPlan> plan_sharing(const OpaqueConfig& config, std::vector<std::string> group_uuids);

}  // namespace nvdra::claims
