#include "agent/config/gate_limits.hpp"

namespace nvdra::config {

const std::vector<GateLimit>& gate_limits() {
  using namespace gate;
  static const std::vector<GateLimit> kLimits = {
      {"ContextualLogging", true,
       "nvdra's logging (--log-format, --log-level, -v) has no contextual-logging switch; leave it at its default",
       false},
      {"LoggingAlphaOptions", false,
       "nvdra has none of the alpha logging options it unlocks (use --log-format, --log-level, -v); leave it off",
       false},
      {"LoggingBetaOptions", true,
       "nvdra has none of the beta logging options it locks (use --log-format, --log-level, -v); leave it at its "
       "default",
       false},
  };
  return kLimits;
}

std::optional<std::string> refused_gate(const FeatureGates& gates) {
  const bool host_managed = gates.enabled(gate::kHostManagedIMEX);
  for (const auto& limit : gate_limits()) {
    const bool value = gates.enabled(limit.name);
    if (value == limit.accepted || (limit.off_under_host_managed && host_managed && !value)) continue;
    std::string line = "feature gate " + std::string(limit.name) + "=" + (value ? "true" : "false");
    // AllAlpha/AllBeta never turn a refused gate on (or off) silently: the line says where the value came from.
    if (!gates.explicit_value(limit.name)) {
      for (const auto* all : {"AllAlpha", "AllBeta"})
        if (auto v = gates.explicit_value(all); v && *v == value)
          line += std::string(" (from ") + all + "=" + (value ? "true" : "false") + ")";
    }
    return line + " is refused: " + std::string(limit.why);
  }
  return std::nullopt;
}

}  // namespace nvdra::config
