#pragma once
// The gates a config check reads, taken from the same --feature-gates text and rules as the agent's
// (config::FeatureGates: upstream's names, defaults and dependencies).
#include <string_view>

#include "agent/base/result.hpp"
#include "agent/claims/config/opaque_config.hpp"
#include "agent/config/feature_gates.hpp"

namespace nvdra::admission {

claims::ConfigGates config_gates(const config::FeatureGates& gates);

// Parses "A=true,B=false" and resolves it as the agent does; errors name the gate.
Result<claims::ConfigGates> parse_config_gates(std::string_view spec);

}  // namespace nvdra::admission
