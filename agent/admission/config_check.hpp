#pragma once
// The opaque configs of a ResourceClaim spec, checked the way prepare will check them: the same
// strict decoder, Normalize and Validate (agent/claims/config/opaque_config.hpp) under the same feature
// gates. Shared by the admission webhook and `nvdractl validate`, so the three cannot drift.
//
// Pure functions, no I/O; safe from any thread.
#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::admission {

// One opaque config of one of nvdra's drivers, with the path of its parameters in the object
// ("spec.devices.config[0].opaque.parameters").
struct PlacedConfig {
  std::string path;
  std::string driver;      // gpu.nvidia.com or compute-domain.nvidia.com
  std::string parameters;  // the raw JSON of opaque.parameters
  // The requests this config names whose device class is one of the driver's own (gpu.nvidia.com,
  // mig.nvidia.com, vfio.gpu.nvidia.com, compute-domain-default-channel.nvidia.com,
  // compute-domain-daemon.nvidia.com): {request, class}. Its kind must fit their devices, as at prepare.
  std::vector<std::pair<std::string, std::string>> request_classes;
};

// A refused config: where, and upstream's webhook wording ("error decoding object at <path>: …",
// "object at <path> is invalid: <field>: …").
struct ConfigProblem {
  std::string path;   // the parameters' path, plus the offending field when known
  std::string message;
};

// Whether `driver` is one nvdra serves (configs of other drivers are never looked at).
bool is_nvdra_driver(std::string_view driver);

// Appends the configs of nvdra's drivers found in `spec` (a ResourceClaimSpec: {devices: {requests:
// […], config: […]}}) to `out`; `path` is the spec's own path ("spec", "spec.spec"). A spec of the
// wrong shape is an error naming the field (kInvalidArgument); absent devices or config are no configs.
Status collect_configs(simdjson::dom::element spec, const std::string& path, std::vector<PlacedConfig>& out);

// Decodes, normalizes and validates one config; nullopt when prepare would accept it.
std::optional<ConfigProblem> check_config(const PlacedConfig& config, const claims::ConfigGates& gates);

std::vector<ConfigProblem> check_configs(const std::vector<PlacedConfig>& configs, const claims::ConfigGates& gates);

// "<n> configs failed to validate: <e1>; <e2>" (upstream's webhook message).
std::string denial_message(const std::vector<ConfigProblem>& problems);

}  // namespace nvdra::admission
