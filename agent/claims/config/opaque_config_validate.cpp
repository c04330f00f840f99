// Normalize and Validate as upstream's api/nvidia.com/resource/v1beta1/{gpuconfig,migconfig,
// vfioconfig,sharing,computedomainconfig}.go do them (reference §3.2), plus the seed's
// fabricTopologyConfig rules. Messages are upstream's, verbatim where upstream has one.
#include <algorithm>
#include <array>

#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::claims {
namespace {

Status invalid(std::string message, std::string field) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}, std::move(field)};
}

template <std::size_t N>
bool one_of(std::string_view v, const std::array<std::string_view, N>& allowed) {
  return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
}

constexpr std::array<std::string_view, 4> kIntervals = {"Default", "Short", "Medium", "Long"};

Status validate_strategy(const std::string& strategy, const ConfigGates& gates) {
  if (strategy == "TimeSlicing") {
    if (!gates.time_slicing_settings)
      return invalid(
          "\"TimeSlicing\" is selected as the GPU sharing strategy, but the \"TimeSlicingSettings\" feature gate is "
          "not enabled",
          "sharing.strategy");
    return {};
  }
  if (strategy == "MPS") {
    if (!gates.mps_support)
      return invalid("\"MPS\" is selected as the GPU sharing strategy, but the \"MPSSupport\" feature gate is not enabled",
                     "sharing.strategy");
    return {};
  }
  return invalid("unknown GPU sharing strategy: " + strategy + ", supported GPU sharing strategies: TimeSlicing, MPS",
                 "sharing.strategy");
}

Status validate_mps(const std::optional<MpsConfig>& mps) {
  if (!mps || !mps->default_active_thread_percentage) return {};
  const auto pct = *mps->default_active_thread_percentage;
  const std::string field = "sharing.mpsConfig.defaultActiveThreadPercentage";
  if (pct < 0) return invalid("active thread percentage must not be negative", field);
  if (pct > 100) return invalid("active thread percentage must not be greater than 100", field);
  return {};
}

Status validate_time_slicing(const std::optional<TimeSlicingConfig>& tsc) {
  if (!tsc) return {};  // Normalize fills it in; without Normalize the interval is Default
  const std::string field = "sharing.timeSlicingConfig.interval";
  // Upstream dereferences the missing interval and crashes the plugin; we say what is missing.
  if (!tsc->interval)
    return invalid("timeSlicingConfig is present but has no interval, supported time-slice intervals: Default, "
                   "Short, Medium, Long",
                   field);
  if (!one_of(*tsc->interval, kIntervals))
    return invalid("unknown time-slice interval: " + *tsc->interval +
                       ", supported time-slice intervals: Default, Short, Medium, Long",
                   field);
  return {};
}

Status validate_fabric(const FabricTopologyConfig& f, const ConfigGates& gates) {
  const std::string base = "fabricTopologyConfig";
  if (!gates.fabric_topology_support)
    return invalid("fabricTopologyConfig is set, but the \"FabricTopologySupport\" feature gate is not enabled", base);
  constexpr std::array<std::string_view, 3> kStrategies = {"Auto", "Manual", "Disabled"};
  if (!one_of(f.strategy, kStrategies))
    return invalid("unknown fabric topology strategy: \"" + f.strategy +
                       "\", supported fabric topology strategies: Auto, Manual, Disabled",
                   base + ".strategy");
  if (f.partition_size && *f.partition_size != 2 && *f.partition_size != 4 && *f.partition_size != 8)
    return invalid("unsupported partition size: " + std::to_string(*f.partition_size) +
                       ", supported partition sizes: 2, 4, 8",
                   base + ".partitionSize");
  constexpr std::array<std::string_view, 4> kModels = {"BareMetal", "FullPassthrough", "SharedNVSwitch", "VGPU"};
  if (!f.virtualization_model.empty() && !one_of(f.virtualization_model, kModels))
    return invalid("unknown virtualization model: \"" + f.virtualization_model +
                       "\", supported virtualization models: BareMetal, FullPassthrough, SharedNVSwitch, VGPU",
                   base + ".virtualizationModel");
  if (f.min_bandwidth && !(*f.min_bandwidth >= 0))
    return invalid("minBandwidth must not be negative (GB/s)", base + ".minBandwidth");
  if (f.max_latency && !(*f.max_latency >= 0))
    return invalid("maxLatency must not be negative (ms)", base + ".maxLatency");
  if (f.strategy == "Manual" && f.partition_ids.empty())
    return invalid("partitionIDs must list at least one partition when the fabric topology strategy is Manual",
                   base + ".partitionIDs");
  // The seed lists partitionIDs "For Manual strategy"; under Auto nothing would read them.
  if (f.strategy == "Auto" && !f.partition_ids.empty())
    return invalid("partitionIDs is set, but the fabric topology strategy is Auto, which picks the partition itself "
                   "(by partitionSize); set strategy: Manual to activate listed partitions, or remove partitionIDs",
                   base + ".partitionIDs");
  for (std::size_t i = 0; i < f.partition_ids.size(); ++i)
    if (f.partition_ids[i].empty())
      return invalid("partition IDs must not be empty", base + ".partitionIDs[" + std::to_string(i) + "]");
  return {};
}

struct Normalizer {
  const ConfigGates& gates;
  void operator()(GpuConfig& c) const {
    if (c.sharing) {
      if (gates.time_slicing_settings && c.sharing->strategy == "TimeSlicing" && !c.sharing->time_slicing_config)
        c.sharing->time_slicing_config = TimeSlicingConfig{std::string("Default")};
      if (gates.mps_support && c.sharing->strategy == "MPS" && !c.sharing->mps_config)
        c.sharing->mps_config = MpsConfig{};
    }
    if (c.fabric_topology_config && c.fabric_topology_config->virtualization_model.empty())
      c.fabric_topology_config->virtualization_model = "BareMetal";
  }
  void operator()(MigDeviceConfig& c) const {
    if (c.sharing && gates.mps_support && c.sharing->strategy == "MPS" && !c.sharing->mps_config)
      c.sharing->mps_config = MpsConfig{};
  }
  void operator()(VfioDeviceConfig& c) const {
    if (!c.iommu) c.iommu = IommuConfig{};
    if (c.iommu->backend_policy.empty()) c.iommu->backend_policy = "LegacyOnly";
  }
  void operator()(ComputeDomainChannelConfig&) const {}
  void operator()(ComputeDomainDaemonConfig&) const {}
  void operator()(UnrecognizedObject&) const {}
};

struct Validator {
  const ConfigGates& gates;
  Status operator()(const GpuConfig& c) const {
    if (c.sharing) {
      if (auto s = validate_strategy(c.sharing->strategy, gates); !s) return s;
      if (c.sharing->strategy == "TimeSlicing") {
        if (auto s = validate_time_slicing(c.sharing->time_slicing_config); !s) return s;
      } else if (auto s = validate_mps(c.sharing->mps_config); !s) {
        return s;
      }
    }
    if (c.fabric_topology_config) return validate_fabric(*c.fabric_topology_config, gates);
    return {};
  }
  Status operator()(const MigDeviceConfig& c) const {
    if (!c.sharing) return {};
    if (auto s = validate_strategy(c.sharing->strategy, gates); !s) return s;
    if (c.sharing->strategy == "MPS") return validate_mps(c.sharing->mps_config);
    return {};
  }
  Status operator()(const VfioDeviceConfig& c) const {
    const std::string policy = c.iommu ? c.iommu->backend_policy : std::string();
    if (policy.empty() || policy == "LegacyOnly" || policy == "PreferIommuFD") return {};
    return invalid("unknown IOMMU backend policy: " + policy +
                       ", supported IOMMU backend policies: LegacyOnly, PreferIommuFD",
                   "iommu.backendPolicy");
  }
  Status operator()(const ComputeDomainChannelConfig& c) const {
    if (c.domain_id.empty()) return invalid("domainID cannot be empty", "domainID");
    // The controller renders only these two (the ComputeDomain CRD enumerates them); anything else
    // would silently mean Single upstream, so we say so instead.
    if (!c.allocation_mode.empty() && c.allocation_mode != "Single" && c.allocation_mode != "All")
      return invalid("unknown allocation mode: " + c.allocation_mode + ", supported allocation modes: Single, All",
                     "allocationMode");
    return {};
  }
  Status operator()(const ComputeDomainDaemonConfig& c) const {
    if (c.domain_id.empty()) return invalid("domainID cannot be empty", "domainID");
    return {};
  }
  Status operator()(const UnrecognizedObject&) const {
    return invalid("runtime object is not a recognized configuration", "kind");
  }
};

}  // namespace

void normalize(OpaqueConfig& config, const ConfigGates& gates) { std::visit(Normalizer{gates}, config); }

Status validate(const OpaqueConfig& config, const ConfigGates& gates) {
  return std::visit(Validator{gates}, config);
}

}  // namespace nvdra::claims
