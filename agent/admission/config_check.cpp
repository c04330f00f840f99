// Decode → own kind → Normalize → Validate, as agent/claims/config/config_resolver.cpp does it for the
// config that wins a device at prepare; here for every config, since admission does not know yet
// which device each will win.
#include "agent/admission/config_check.hpp"

#include "agent/admission/request_classes.hpp"
#include "agent/claims/config/config_resolver.hpp"

namespace nvdra::admission {
namespace {

Error shape_error(const std::string& field, std::string message) {
  return Error{ErrorCode::kInvalidArgument, field + ": " + std::move(message), {}, field};
}

// The kinds each driver prepares (prepare refuses another driver's kind with "runtime object is not
// a recognized configuration" once it applies to a device).
std::string_view own_kinds(std::string_view driver) {
  return driver == claims::kGpuDriverName ? "GpuConfig, MigDeviceConfig, VfioDeviceConfig"
                                          : "ComputeDomainChannelConfig, ComputeDomainDaemonConfig";
}

bool own_kind(const claims::OpaqueConfig& c, std::string_view driver) {
  if (driver == claims::kGpuDriverName)
    return std::holds_alternative<claims::GpuConfig>(c) || std::holds_alternative<claims::MigDeviceConfig>(c) ||
           std::holds_alternative<claims::VfioDeviceConfig>(c);
  return std::holds_alternative<claims::ComputeDomainChannelConfig>(c) ||
         std::holds_alternative<claims::ComputeDomainDaemonConfig>(c);
}

std::string with_field(const std::string& path, const std::string& field) {
  return field.empty() ? path : path + "." + field;
}

std::string_view driver_of(claims::DeviceType type) {
  const bool cd = type == claims::DeviceType::kChannel || type == claims::DeviceType::kDaemon;
  return cd ? claims::kComputeDomainDriverName : claims::kGpuDriverName;
}

std::string_view kind_for(claims::DeviceType type) {
  switch (type) {
    case claims::DeviceType::kGpu: return "GpuConfig";
    case claims::DeviceType::kMig: return "MigDeviceConfig";
    case claims::DeviceType::kVfio: return "VfioDeviceConfig";
    case claims::DeviceType::kChannel: return "ComputeDomainChannelConfig";
    case claims::DeviceType::kDaemon: return "ComputeDomainDaemonConfig";
  }
  return "";
}

// The requests the config names whose class selects devices of its own driver.
std::vector<std::pair<std::string, std::string>> named_classes(simdjson::dom::object entry, std::string_view driver,
                                                               const std::map<std::string, std::string>& classes) {
  std::vector<std::pair<std::string, std::string>> out;
  simdjson::dom::array requests;
  if (entry["requests"].get(requests)) return out;
  for (auto r : requests) {
    std::string_view name;
    if (r.get(name)) continue;
    const auto it = classes.find(std::string(name));
    if (it == classes.end()) continue;
    const auto type = device_type_of_class(it->second);
    if (type && driver_of(*type) == driver) out.emplace_back(it->first, it->second);
  }
  return out;
}

// Prepare refuses a config naming a request whose devices its kind cannot configure.
std::optional<ConfigProblem> check_fit(const PlacedConfig& config, const claims::OpaqueConfig& decoded) {
  for (const auto& [request, device_class] : config.request_classes) {
    const auto type = *device_type_of_class(device_class);
    if (kind_fits(decoded, type)) continue;
    return ConfigProblem{config.path + ".kind",
                         "object at " + config.path + " is invalid: kind: cannot apply " +
                             std::string(claims::kind_name(decoded)) + " to request \"" + request +
                             "\" of device class " + device_class + " (devices of type \"" +
                             std::string(claims::to_string(type)) + "\", configured by " +
                             std::string(kind_for(type)) + ")"};
  }
  return std::nullopt;
}

Status collect_one(simdjson::dom::element entry, const std::string& path, const std::map<std::string, std::string>& classes,
                   std::vector<PlacedConfig>& out) {
  simdjson::dom::object obj;
  if (entry.get(obj)) return shape_error(path, "must be an object");
  simdjson::dom::element opaque;
  if (obj["opaque"].get(opaque) || opaque.is_null()) return {};  // not an opaque config: not ours
  simdjson::dom::object opaque_obj;
  if (opaque.get(opaque_obj)) return shape_error(path + ".opaque", "must be an object");
  std::string_view driver;
  simdjson::dom::element driver_el;
  if (opaque_obj["driver"].get(driver_el) || driver_el.get(driver)) return {};  // no string driver: not ours
  if (!is_nvdra_driver(driver)) return {};
  simdjson::dom::element params;
  const std::string params_path = path + ".opaque.parameters";
  if (opaque_obj["parameters"].get(params)) return shape_error(params_path, "is required");
  out.push_back({params_path, std::string(driver), simdjson::minify(params), named_classes(obj, driver, classes)});
  return {};
}

}  // namespace

bool is_nvdra_driver(std::string_view driver) {
  return driver == claims::kGpuDriverName || driver == claims::kComputeDomainDriverName;
}

Status collect_configs(simdjson::dom::element spec, const std::string& path, std::vector<PlacedConfig>& out) {
  simdjson::dom::object spec_obj;
  if (spec.is_null()) return {};
  if (spec.get(spec_obj)) return shape_error(path, "must be an object");
  simdjson::dom::element devices;
  if (spec_obj["devices"].get(devices) || devices.is_null()) return {};
  simdjson::dom::object devices_obj;
  if (devices.get(devices_obj)) return shape_error(path + ".devices", "must be an object");
  simdjson::dom::element config;
  if (devices_obj["config"].get(config) || config.is_null()) return {};
  simdjson::dom::array list;
  if (config.get(list)) return shape_error(path + ".devices.config", "must be an array");
  const auto classes = request_classes(devices_obj);
  std::size_t i = 0;
  for (auto entry : list) {
    if (auto s = collect_one(entry, path + ".devices.config[" + std::to_string(i++) + "]", classes, out); !s) return s;
  }
  return {};
}

std::optional<ConfigProblem> check_config(const PlacedConfig& config, const claims::ConfigGates& gates) {
  auto decoded = claims::decode_opaque_config(config.parameters, claims::DecodeMode::kStrict);
  if (!decoded) {
    const auto& e = decoded.error();
    return ConfigProblem{with_field(config.path, e.field), "error decoding object at " + config.path + ": " + e.message};
  }
  if (!own_kind(*decoded, config.driver)) {
    return ConfigProblem{config.path + ".kind", "object at " + config.path + " is invalid: kind: " +
                                                    std::string(claims::kind_name(*decoded)) +
                                                    " is not a configuration of driver " + config.driver +
                                                    " (its kinds: " + std::string(own_kinds(config.driver)) + ")"};
  }
  claims::normalize(*decoded, gates);
  if (auto s = claims::validate(*decoded, gates); !s) {
    const auto& e = s.error();
    const std::string field_prefix = e.field.empty() ? "" : e.field + ": ";
    return ConfigProblem{with_field(config.path, e.field),
                         "object at " + config.path + " is invalid: " + field_prefix + e.message};
  }
  return check_fit(config, *decoded);
}

std::vector<ConfigProblem> check_configs(const std::vector<PlacedConfig>& configs, const claims::ConfigGates& gates) {
  std::vector<ConfigProblem> out;
  for (const auto& c : configs)
    if (auto p = check_config(c, gates)) out.push_back(std::move(*p));
  return out;
}

std::string denial_message(const std::vector<ConfigProblem>& problems) {
  std::string msg = std::to_string(problems.size()) + " configs failed to validate: ";
  for (std::size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i].message;
  return msg;
}

}  // namespace nvdra::admission
