#include "agent/config/feature_gates.hpp"

#include <algorithm>

namespace nvdra::config {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const GateSpec* find_gate(std::string_view name) {
  for (const auto& g : FeatureGates::known())
    if (g.name == name) return &g;
  return nullptr;
}

constexpr std::string_view kAllAlpha = "AllAlpha";
constexpr std::string_view kAllBeta = "AllBeta";

Error gate_error(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

}  // namespace

const std::vector<GateSpec>& FeatureGates::known() {
  using namespace gate;
  static const std::vector<GateSpec> kGates = {
      {kTimeSlicingSettings, false, Stage::kAlpha},
      {kMPSSupport, false, Stage::kAlpha},
      {kIMEXDaemonsWithDNSNames, true, Stage::kBeta},
      {kPassthroughSupport, false, Stage::kAlpha},
      {kDynamicMIG, false, Stage::kAlpha},
      {kNVMLDeviceHealthCheck, false, Stage::kAlpha},
      {kComputeDomainCliques, true, Stage::kBeta},
      {kCrashOnNVLinkFabricErrors, true, Stage::kBeta},
      {kDeviceMetadata, false, Stage::kAlpha},
      {kDRAListTypeAttributes, false, Stage::kAlpha},
      {kFabricManagerPartitioning, false, Stage::kAlpha},
      {kHostManagedIMEXDaemon, false, Stage::kAlpha},
      {kConsumableShares, false, Stage::kAlpha},
      {kHostManagedIMEX, false, Stage::kAlpha},
      {kFabricTopologySupport, false, Stage::kAlpha},
      // From k8s component-base logging; accepted so upstream manifests keep working.
      {"ContextualLogging", true, Stage::kBeta},
      {"LoggingAlphaOptions", false, Stage::kAlpha},
      {"LoggingBetaOptions", true, Stage::kBeta},
  };
  return kGates;
}

std::optional<bool> parse_go_bool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "TRUE" || v == "true" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "FALSE" || v == "false" || v == "False") return false;
  return std::nullopt;
}

Status FeatureGates::set(std::string_view name, bool value) {
  if (name != kAllAlpha && name != kAllBeta && find_gate(name) == nullptr) {
    return gate_error("unrecognized feature gate: " + std::string(name));
  }
  explicit_[std::string(name)] = value;
  return {};
}

Status FeatureGates::set_from_string(std::string_view spec) {
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view item = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;  // the upstream chart renders a trailing comma
    const auto eq = item.find('=');
    const std::string_view key = trim(item.substr(0, eq));
    if (eq == std::string_view::npos) return gate_error("missing bool value for " + std::string(key));
    const std::string_view raw = trim(item.substr(eq + 1));
    const auto value = parse_go_bool(raw);
    if (!value) {
      return gate_error("invalid value of " + std::string(key) + "=" + std::string(raw) +
                        ", err: strconv.ParseBool: parsing \"" + std::string(raw) + "\": invalid syntax");
    }
    if (auto st = set(key, *value); !st) return st;
  }
  return {};
}

bool FeatureGates::enabled(std::string_view name) const {
  if (auto it = explicit_.find(name); it != explicit_.end()) return it->second;
  const GateSpec* spec = find_gate(name);
  if (spec == nullptr) return false;
  // AllAlpha/AllBeta change the default of gates at that stage; an explicit setting still wins.
  if (spec->stage == Stage::kAlpha) {
    if (auto it = explicit_.find(kAllAlpha); it != explicit_.end()) return it->second;
  } else if (spec->stage == Stage::kBeta) {
    if (auto it = explicit_.find(kAllBeta); it != explicit_.end()) return it->second;
  }
  return spec->default_value;
}

std::optional<bool> FeatureGates::explicit_value(std::string_view name) const {
  if (auto it = explicit_.find(name); it != explicit_.end()) return it->second;
  return std::nullopt;
}

Result<std::vector<std::string>> FeatureGates::resolve() {
  using namespace gate;
  std::vector<std::string> overrides;
  // Seed design: resolveHostManagedIMEXOverrides runs before validation and forces both gates off.
  if (enabled(kHostManagedIMEX)) {
    for (auto forced : {kIMEXDaemonsWithDNSNames, kComputeDomainCliques}) {
      if (enabled(forced)) {
        explicit_[std::string(forced)] = false;
        overrides.push_back("HostManagedIMEX is enabled; forcing " + std::string(forced) + "=false");
      }
    }
  }
  auto fail = [](std::string msg) { return gate_error("feature gate validation failed: " + msg); };
  if (enabled(kComputeDomainCliques) && !enabled(kIMEXDaemonsWithDNSNames))
    return fail("feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames to also be enabled");
  if (enabled(kDeviceMetadata) && !enabled(kPassthroughSupport))
    return fail("feature gate DeviceMetadata requires PassthroughSupport to also be enabled");
  const std::pair<std::string_view, std::string_view> exclusive[] = {
      {kDynamicMIG, kPassthroughSupport},
      // DynamicMIG with NVMLDeviceHealthCheck is accepted: nvdra's monitor gives a DynamicMIG device its
      // parent GPU's health (upstream's monitor knew static MIG devices only).
      {kDynamicMIG, kMPSSupport},
      {kPassthroughSupport, kNVMLDeviceHealthCheck},
  };
  for (const auto& [a, b] : exclusive) {
    if (enabled(a) && enabled(b))
      return fail("feature gate " + std::string(a) + " is currently mutually exclusive with " + std::string(b));
  }
  return overrides;
}

std::string FeatureGates::describe() const {
  std::vector<std::string> items;
  for (const auto& g : known()) items.push_back(std::string(g.name) + "=" + (enabled(g.name) ? "true" : "false"));
  std::sort(items.begin(), items.end());
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace nvdra::config
