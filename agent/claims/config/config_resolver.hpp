#pragma once
// Which opaque config applies to which allocated device, as upstream's getConfigResultsMap decides
// it (../shared/reference/upstream-driver.md §3.3), and the device groups that follow from it.
//
// Plain structs in and out, independent of the k8s client: the pipeline copies
// status.allocation.devices.{results,config} of the claim into ResolveInput (plus the device type
// it knows from its inventory) and gets back, per result, the index of its DeviceGroup. Pure and
// thread-safe. Any error fails the whole claim (upstream returns it for the claim); it is
// kInvalidArgument with Error::claim set and upstream's wording in the message.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::claims {

inline constexpr std::string_view kGpuDriverName = "gpu.nvidia.com";
inline constexpr std::string_view kComputeDomainDriverName = "compute-domain.nvidia.com";

// The published `type` attribute of a device (static and dynamic MIG are both kMig).
enum class DeviceType { kGpu, kMig, kVfio, kChannel, kDaemon };
std::string_view to_string(DeviceType type);

struct ClaimRef {
  std::string ns, name, uid;
  std::string describe() const { return ns + "/" + name + " (" + uid + ")"; }
};

// One entry of status.allocation.devices.results.
struct AllocationResult {
  std::string request;  // verbatim, "<main>/<sub>" for prioritized-list allocations
  std::string driver;
  std::string pool;
  std::string device;
  DeviceType type = DeviceType::kGpu;  // from the agent's inventory; ignored for other drivers
  bool admin_access = false;           // status.allocation.devices.results[].adminAccess
  std::string share_id;                // …results[].shareID (a share of a multi-allocatable device)
};

struct OpaqueParameters {
  std::string driver;
  std::string parameters;  // the raw JSON bytes of opaque.parameters
};

// One entry of status.allocation.devices.config.
struct ConfigEntry {
  std::string source;                    // "FromClass" | "FromClaim"; anything else is an error
  std::vector<std::string> requests;     // empty: applies to every request it fits
  std::optional<OpaqueParameters> opaque;  // absent: an error (only opaque parameters are supported)
};

struct ResolveInput {
  std::string driver;  // kGpuDriverName or kComputeDomainDriverName
  ClaimRef claim;
  std::vector<AllocationResult> results;
  std::vector<ConfigEntry> configs;
  ConfigGates gates;
};

// Where a group's config came from: a built-in default or input.configs[config_index].
enum class ConfigOrigin { kDefault, kFromClass, kFromClaim };

// Results that share one config object (one MPS daemon per group, one time-slice setting, …).
struct DeviceGroup {
  OpaqueConfig config;  // normalized and validated
  ConfigOrigin origin = ConfigOrigin::kDefault;
  std::optional<std::size_t> config_index;  // into ResolveInput::configs, unless a default
  std::vector<std::size_t> results;         // indices into ResolveInput::results, ascending
};

struct Resolution {
  std::vector<DeviceGroup> groups;  // ordered by their first result
  // Per input result: its group, or nullopt for results of another driver.
  std::vector<std::optional<std::size_t>> group_of_result;
};

Result<Resolution> resolve_configs(const ResolveInput& input);

// "<main>" of "<main>/<sub>": what the gRPC response names (upstream strips the subrequest).
std::string base_request(const std::string& request);

}  // namespace nvdra::claims
