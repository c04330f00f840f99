#pragma once
// The gates nvdra accepts only at one value: upstream gates whose behaviour nvdra does not have
// (refused when turned on) and default-on gates that belong to a mode nvdra does not run
// (refused when turned off, except where HostManagedIMEX turns them off itself). A refused gate
// stops the agent at start with one line naming it, why, and what to do (README "Refused options").
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config/feature_gates.hpp"

namespace nvdra::config {

struct GateLimit {
  std::string_view name;
  bool accepted;                     // the only value nvdra takes
  std::string_view why;              // why the other value is refused, and what to do instead
  bool off_under_host_managed;       // false is also accepted when HostManagedIMEX is on (it forces it)
};

const std::vector<GateLimit>& gate_limits();

// The first gate (in gate_limits() order) whose resolved value nvdra refuses, as one line:
// "feature gate NVMLDeviceHealthCheck=true is refused: …". Call before FeatureGates::resolve() (HostManagedIMEX's forced values count as accepted).
std::optional<std::string> refused_gate(const FeatureGates& gates);

}  // namespace nvdra::config
