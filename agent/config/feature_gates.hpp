#pragma once
// Feature gates with the upstream driver's names, stages and defaults (upstream
// pkg/featuregates/featuregates.go; ../shared/reference/upstream-driver.md §7), plus the seed's
// HostManagedIMEX and FabricTopologySupport. Parsing follows k8s component-base featuregate:
// "Key=bool,Key2=bool", empty items skipped, Go ParseBool values, AllAlpha/AllBeta.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::config {

enum class Stage { kAlpha, kBeta, kGA };

struct GateSpec {
  std::string_view name;
  bool default_value;
  Stage stage;
};

namespace gate {
inline constexpr std::string_view kTimeSlicingSettings = "TimeSlicingSettings";
inline constexpr std::string_view kMPSSupport = "MPSSupport";
inline constexpr std::string_view kIMEXDaemonsWithDNSNames = "IMEXDaemonsWithDNSNames";
inline constexpr std::string_view kPassthroughSupport = "PassthroughSupport";
inline constexpr std::string_view kDynamicMIG = "DynamicMIG";
inline constexpr std::string_view kNVMLDeviceHealthCheck = "NVMLDeviceHealthCheck";
inline constexpr std::string_view kComputeDomainCliques = "ComputeDomainCliques";
inline constexpr std::string_view kCrashOnNVLinkFabricErrors = "CrashOnNVLinkFabricErrors";
inline constexpr std::string_view kDeviceMetadata = "DeviceMetadata";
inline constexpr std::string_view kDRAListTypeAttributes = "DRAListTypeAttributes";
inline constexpr std::string_view kFabricManagerPartitioning = "FabricManagerPartitioning";
inline constexpr std::string_view kHostManagedIMEXDaemon = "HostManagedIMEXDaemon";
inline constexpr std::string_view kConsumableShares = "ConsumableShares";
inline constexpr std::string_view kHostManagedIMEX = "HostManagedIMEX";
inline constexpr std::string_view kFabricTopologySupport = "FabricTopologySupport";
}  // namespace gate

class FeatureGates {
 public:
  static const std::vector<GateSpec>& known();

  // Applies "A=true,B=false". Errors carry the upstream wording (unrecognized feature gate: X, …).
  Status set_from_string(std::string_view spec);
  Status set(std::string_view name, bool value);

  // HostManagedIMEX overrides (seed design, "feature gate"), then the dependency rules. Returns the
  // override lines to log ("HostManagedIMEX is enabled; forcing …=false") or the first violation.
  Result<std::vector<std::string>> resolve();

  bool enabled(std::string_view name) const;
  // The value set for `name` itself (not through AllAlpha/AllBeta), if any.
  std::optional<bool> explicit_value(std::string_view name) const;
  // "Name=bool" for every known gate, sorted; for logs and status.
  std::string describe() const;

 private:
  std::map<std::string, bool, std::less<>> explicit_;
};

// Go strconv.ParseBool.
std::optional<bool> parse_go_bool(std::string_view text);

}  // namespace nvdra::config
