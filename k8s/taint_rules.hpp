#pragma once
// Device taints as the API server of the slice layout accepts them (k8s-openapi/LIMITS.md "Device
// taints"): 1.34 knows effects NoSchedule and NoExecute only (None is 1.35+) and at most 4 taints
// per device; 1.35+ allows 16. A taint the server would refuse is left out, not the whole slice.
#include "agent/base/device.hpp"
#include "k8s/slice_plan.hpp"

namespace nvdra::k8s {

inline constexpr std::size_t kMaxTaintsPerDevice134 = 4;
inline constexpr std::size_t kMaxTaintsPerDevice = 16;

void fit_taints(PublishedDevice& device, CounterLayout layout);

}  // namespace nvdra::k8s
