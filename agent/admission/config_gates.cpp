#include "agent/admission/config_gates.hpp"

namespace nvdra::admission {

claims::ConfigGates config_gates(const config::FeatureGates& gates) {
  return claims::ConfigGates{gates.enabled(config::gate::kTimeSlicingSettings), gates.enabled(config::gate::kMPSSupport),
                             gates.enabled(config::gate::kPassthroughSupport),
                             gates.enabled(config::gate::kFabricTopologySupport)};
}

Result<claims::ConfigGates> parse_config_gates(std::string_view spec) {
  config::FeatureGates gates;
  if (auto s = gates.set_from_string(spec); !s) return s.error();
  if (auto r = gates.resolve(); !r) return r.error();
  return config_gates(gates);
}

}  // namespace nvdra::admission
