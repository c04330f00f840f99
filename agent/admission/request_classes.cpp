#include "agent/admission/request_classes.hpp"

namespace nvdra::admission {
namespace {

std::string class_of(simdjson::dom::object request) {
  std::string_view out;
  simdjson::dom::object exactly;
  if (!request["exactly"].get(exactly) && !exactly["deviceClassName"].get(out)) return std::string(out);
  if (!request["deviceClassName"].get(out)) return std::string(out);  // v1beta1
  return {};
}

}  // namespace

std::map<std::string, std::string> request_classes(simdjson::dom::object devices) {
  std::map<std::string, std::string> out;
  simdjson::dom::array requests;
  if (devices["requests"].get(requests)) return out;
  for (auto item : requests) {
    simdjson::dom::object request;
    std::string_view name;
    if (item.get(request) || request["name"].get(name)) continue;
    if (auto c = class_of(request); !c.empty()) out[std::string(name)] = c;
    simdjson::dom::array subrequests;
    if (request["firstAvailable"].get(subrequests)) continue;
    for (auto sub_item : subrequests) {
      simdjson::dom::object sub;
      std::string_view sub_name, sub_class;
      if (sub_item.get(sub) || sub["name"].get(sub_name) || sub["deviceClassName"].get(sub_class)) continue;
      out[std::string(name) + "/" + std::string(sub_name)] = std::string(sub_class);
    }
  }
  return out;
}

std::optional<claims::DeviceType> device_type_of_class(std::string_view device_class) {
  using claims::DeviceType;
  if (device_class == "gpu.nvidia.com") return DeviceType::kGpu;
  if (device_class == "mig.nvidia.com") return DeviceType::kMig;
  if (device_class == "vfio.gpu.nvidia.com") return DeviceType::kVfio;
  if (device_class == "compute-domain-default-channel.nvidia.com") return DeviceType::kChannel;
  if (device_class == "compute-domain-daemon.nvidia.com") return DeviceType::kDaemon;
  return std::nullopt;
}

bool kind_fits(const claims::OpaqueConfig& c, claims::DeviceType type) {
  using claims::DeviceType;
  if (std::holds_alternative<claims::GpuConfig>(c)) return type == DeviceType::kGpu;
  if (std::holds_alternative<claims::MigDeviceConfig>(c)) return type == DeviceType::kMig;
  if (std::holds_alternative<claims::VfioDeviceConfig>(c)) return type == DeviceType::kVfio;
  if (std::holds_alternative<claims::ComputeDomainChannelConfig>(c)) return type == DeviceType::kChannel;
  if (std::holds_alternative<claims::ComputeDomainDaemonConfig>(c)) return type == DeviceType::kDaemon;
  return true;
}

}  // namespace nvdra::admission
