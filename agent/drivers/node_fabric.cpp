#include "agent/drivers/node_fabric.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"

namespace nvdra::drivers {
namespace fs = std::filesystem;

namespace {

std::string under(const std::string& root, const std::string& path) {
  return (root.empty() || root == "/") ? path : root + path;
}

bool has_nvswitch(const std::string& host_root) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(under(host_root, "/proc/driver/nvidia-nvswitch/devices"), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    return true;
  for (auto it = fs::directory_iterator(under(host_root, "/sys/class/infiniband"), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::ifstream vpd(it->path() / "device" / "vpd");
    std::stringstream text;
    text << vpd.rdbuf();
    if (text.str().find("SW_MNG") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

claims::FabricSession open_fabric_session(const config::Options& o, const nvml::DeviceModel& model) {
  claims::FabricSession s;
  for (const auto& g : model.gpus)
    if (g.module_id) s.module_of_gpu[g.uuid] = *g.module_id;
  auto log = logger("fabric");
  if (!has_nvswitch(o.host_root)) {
    s.unavailable = "no NVSwitch (" + under(o.host_root, "/proc/driver/nvidia-nvswitch/devices") +
                    " is empty or missing, and no InfiniBand switch management device)";
    log->info("fabric manager not used: {}", s.unavailable);
    return s;
  }
  fm::LoadOptions lo;
  lo.driver_root = o.container_driver_root;
  if (o.fabricmanager_address) {
    lo.endpoint = fm::Endpoint{*o.fabricmanager_address, false};
  } else {
    lo.endpoint = fm::Endpoint{o.fabricmanager_unix_socket.empty()
                                   ? under(o.container_driver_root, "/run/nvidia-fabricmanager/socket")
                                   : o.fabricmanager_unix_socket,
                               true};
  }
  auto manager = fm::open_fabric_manager(lo);
  if (!manager) {
    s.unavailable = manager.error().message;
    log->warn("fabric manager unavailable: {}", s.unavailable);
    return s;
  }
  auto table = (*manager)->partitions();
  if (!table) {
    s.unavailable = table.error().message;
    log->warn("fabric manager unavailable: {}", s.unavailable);
    return s;
  }
  s.manager = std::shared_ptr<fm::FabricManager>(std::move(*manager));
  s.table = std::move(*table);
  std::size_t active = 0;
  for (const auto& p : *s.table) active += p.active ? 1 : 0;
  log->info("fabric manager endpoint={} partitions={} active={}", s.manager->endpoint(), s.table->size(), active);
  return s;
}

void add_fabric_attributes(DriverResources& resources, const claims::FabricSession& session,
                           const nvml::DeviceModel& model) {
  if (!session.table) return;
  for (auto& d : resources.devices) {
    std::string gpu_uuid;
    for (const char* key : {"parentUUID", "uuid"})
      if (auto it = d.attributes.find(key); it != d.attributes.end())
        if (const auto* s = std::get_if<std::string>(&it->second)) {
          gpu_uuid = *s;
          break;
        }
    if (gpu_uuid.empty()) {  // a DynamicMIG partition without uuid: by its parent's name prefix
      for (const auto& g : model.gpus)
        if (d.name.rfind(g.canonical_name() + "-", 0) == 0) gpu_uuid = g.uuid;
    }
    auto module = session.module_of_gpu.find(gpu_uuid);
    if (module == session.module_of_gpu.end()) continue;
    d.attributes["gpuModuleID"] = static_cast<int64_t>(module->second);
    for (const auto& p : *session.table) {
      const auto ids = p.module_ids();
      if (p.gpus.size() != 1 && p.gpus.size() != 2 && p.gpus.size() != 4 && p.gpus.size() != 8) continue;
      if (std::find(ids.begin(), ids.end(), module->second) == ids.end()) continue;
      d.attributes["partition" + std::to_string(p.gpus.size())] = static_cast<int64_t>(p.id);
    }
  }
}

}  // namespace nvdra::drivers
