#pragma once
// The device class of each request of a ResourceClaimSpec, and the device type the driver's own
// classes select (upstream's chart DeviceClasses, reference §10.3): what lets admission see a config
// whose kind cannot apply to the request's devices, which prepare refuses ("cannot apply GpuConfig
// to device … of type mig"). Requests of other classes (an admin's own CEL) are not judged.
#include <simdjson.h>

#include <map>
#include <optional>
#include <string>

#include "agent/claims/config/config_resolver.hpp"

namespace nvdra::admission {

// request name → deviceClassName: `exactly.deviceClassName` (v1, v1beta2), `deviceClassName`
// (v1beta1), and "<request>/<subrequest>" for each `firstAvailable` entry (what prepare matches).
std::map<std::string, std::string> request_classes(simdjson::dom::object devices);

// The device type a class of nvdra's selects; nullopt for any other class.
std::optional<claims::DeviceType> device_type_of_class(std::string_view device_class);

// Whether a config of this kind applies to devices of `type` (prepare's rule).
bool kind_fits(const claims::OpaqueConfig& config, claims::DeviceType type);

}  // namespace nvdra::admission
