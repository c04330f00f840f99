#pragma once
// Opaque device configuration of API group resource.nvidia.com/v1beta1, as the upstream driver
// decodes, normalises and validates it (../shared/reference/upstream-driver.md §3.1–3.2; upstream
// api/nvidia.com/resource/v1beta1/). Field values stay as decoded (strings for strategies and
// intervals) so Validate can quote the bad value with upstream's wording.
//
// Pure functions, no I/O; safe from any thread.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::claims {

inline constexpr std::string_view kConfigApiVersion = "resource.nvidia.com/v1beta1";

// The feature gates that change what a config may say. Plain bools so this code does not depend on
// agent/config; the pipeline copies them from config::FeatureGates.
struct ConfigGates {
  bool time_slicing_settings = false;    // TimeSlicingSettings
  bool mps_support = false;              // MPSSupport
  bool passthrough_support = false;      // PassthroughSupport
  bool fabric_topology_support = false;  // FabricTopologySupport (seed README)
};

// Strict: unknown and duplicate fields are errors (Prepare, upstream's webhook). Lenient: unknown
// fields are dropped and the last duplicate wins (upstream CD plugin's Unprepare).
enum class DecodeMode { kStrict, kLenient };

struct MpsConfig {
  std::optional<int64_t> default_active_thread_percentage;                 // defaultActiveThreadPercentage
  std::optional<std::string> default_pinned_device_memory_limit;           // a k8s quantity, as written
  std::map<std::string, std::string> default_per_device_pinned_memory_limit;  // UUID or index → quantity
  bool multi_user = false;                                                 // multiUser
  bool operator==(const MpsConfig&) const = default;
};

struct TimeSlicingConfig {
  std::optional<std::string> interval;  // Default | Short | Medium | Long
  bool operator==(const TimeSlicingConfig&) const = default;
};

struct GpuSharing {
  std::string strategy;  // TimeSlicing | MPS
  std::optional<TimeSlicingConfig> time_slicing_config;
  std::optional<MpsConfig> mps_config;
  bool operator==(const GpuSharing&) const = default;
};

// MIG sharing has no timeSlicingConfig (strict decoding rejects it).
struct MigSharing {
  std::string strategy;
  std::optional<MpsConfig> mps_config;
  bool operator==(const MigSharing&) const = default;
};

// The seed README's FabricManager block; accepted only with the FabricTopologySupport gate.
struct FabricTopologyConfig {
  std::string strategy;              // Auto | Manual | Disabled (required)
  std::optional<int64_t> partition_size;  // 2 | 4 | 8
  std::string virtualization_model;  // BareMetal (default) | FullPassthrough | SharedNVSwitch | VGPU
  std::optional<double> min_bandwidth;  // GB/s, ≥ 0
  std::optional<double> max_latency;    // ms, ≥ 0
  std::vector<std::string> partition_ids;  // required for Manual
  bool operator==(const FabricTopologyConfig&) const = default;
};

struct GpuConfig {
  std::optional<GpuSharing> sharing;
  std::optional<FabricTopologyConfig> fabric_topology_config;
  bool operator==(const GpuConfig&) const = default;
};

struct MigDeviceConfig {
  std::optional<MigSharing> sharing;
  bool operator==(const MigDeviceConfig&) const = default;
};

struct IommuConfig {
  std::string backend_policy;  // LegacyOnly (default, also when empty) | PreferIommuFD
  bool enable_api_device = false;
  bool operator==(const IommuConfig&) const = default;
};

struct VfioDeviceConfig {
  std::optional<IommuConfig> iommu;
  bool operator==(const VfioDeviceConfig&) const = default;
};

struct ComputeDomainChannelConfig {
  std::string domain_id;        // domainID: the ComputeDomain UID, required
  std::string allocation_mode;  // Single (or empty) | All
  bool operator==(const ComputeDomainChannelConfig&) const = default;
};

struct ComputeDomainDaemonConfig {
  std::string domain_id;
  bool operator==(const ComputeDomainDaemonConfig&) const = default;
};

// A kind registered in upstream's scheme that is not a device config (ComputeDomain,
// ComputeDomainClique). It decodes, and fails with "runtime object is not a recognized
// configuration" only if it wins for a device (upstream behaviour).
struct UnrecognizedObject {
  std::string kind;
  bool operator==(const UnrecognizedObject&) const = default;
};

using OpaqueConfig = std::variant<GpuConfig, MigDeviceConfig, VfioDeviceConfig, ComputeDomainChannelConfig,
                                  ComputeDomainDaemonConfig, UnrecognizedObject>;

// "GpuConfig", "MigDeviceConfig", … (the JSON kind).
std::string_view kind_name(const OpaqueConfig& config);

// Decodes one opaque parameters object (the raw JSON bytes of opaque.parameters). Errors are
// kInvalidArgument with upstream's wording: "strict decoding error: unknown field \"a.b\"",
// "Object 'Kind' is missing in '…'", "no kind \"X\" is registered for version \"V\" …"; Error::field
// holds the dotted path of the first offending field. After upstream's words an unknown field's error
// lists what its object takes: "; allowed fields of a: b, c" ("; allowed fields: …" at the top level).
// The gates are not consulted here.
Result<OpaqueConfig> decode_opaque_config(std::string_view json, DecodeMode mode = DecodeMode::kStrict);

// Upstream Normalize: fills implied defaults (timeSlicingConfig {interval: Default} and mpsConfig {}
// when the gates are on, the VFIO iommu defaults, virtualizationModel BareMetal). Idempotent.
void normalize(OpaqueConfig& config, const ConfigGates& gates);

// Upstream Validate, with upstream's messages (e.g. "unknown time-slice interval: X, supported
// time-slice intervals: Default, Short, Medium, Long"). Error::field names the offending field.
// Unlike upstream, `timeSlicingConfig: {}` is an error rather than a crash.
Status validate(const OpaqueConfig& config, const ConfigGates& gates);

// Limit on the parameters accepted, far above any real config (k8s itself caps opaque parameters
// at 10 KiB); bigger input is refused before parsing.
inline constexpr std::size_t kMaxOpaqueConfigBytes = 64 * 1024;

}  // namespace nvdra::claims
