#include "agent/drivers/node_fabric.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
#include "agent/status/agent_status.hpp"
#include "nvml/upstream_names.hpp"

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

FabricProbe probe_fabric(const config::Options& o, const nvml::DeviceModel& model) {
  FabricProbe out;
  auto& s = out.session;
  for (const auto& g : model.gpus)
    if (g.module_id) s.module_of_gpu[g.uuid] = *g.module_id;
  if (!has_nvswitch(o.host_root)) {
    s.unavailable = "no NVSwitch (" + under(o.host_root, "/proc/driver/nvidia-nvswitch/devices") +
                    " is empty or missing, and no InfiniBand switch management device)";
    logger("fabric")->info("fabric manager not used: {}", s.unavailable);
    return out;
  }
  s.nvswitch = true;
  s.unavailable = "not connected yet";
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
  out.load = std::move(lo);
  return out;
}

claims::FmOpener fabric_manager_opener(fm::LoadOptions load) {
  return [load = std::move(load)]() -> Result<claims::FmConnection> {
    auto manager = fm::open_fabric_manager(load);
    if (!manager) return manager.error();
    auto table = (*manager)->partitions();
    if (!table) return table.error();
    return claims::FmConnection{std::shared_ptr<fm::FabricManager>(std::move(*manager)), std::move(*table)};
  };
}

boost::asio::awaitable<claims::FmOpener> connect_at_start(claims::FabricPartitions& fabric,
                                                          std::optional<fm::LoadOptions> load,
                                                          status::AgentStatus& status) {
  if (!load) co_return claims::FmOpener{};
  auto st = co_await fabric.connect(fabric_manager_opener(*load));
  if (st) co_return claims::FmOpener{};
  logger("fabric")->warn("fabric manager unavailable: {}; retrying in the background, claims needing a partition "
                         "fail until it connects",
                         st.error().message);
  status.record_error(std::string(config::kGpuDriverName), "fabric manager unavailable: " + st.error().message);
  co_return fabric_manager_opener(std::move(*load));
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
    if (auto type = d.attributes.find("type"); type != d.attributes.end() && type->second == AttributeValue{std::string("vfio")}) {
      // A VFIO twin: its uuid is upstream's VFIO uuid; the parent GPU is the one at its PCI address.
      gpu_uuid.clear();
      if (auto bus = d.attributes.find("resource.kubernetes.io/pciBusID"); bus != d.attributes.end())
        if (const auto* address = std::get_if<std::string>(&bus->second))
          for (const auto& g : model.gpus)
            if (nvml::normalize_bus_id(g.pci.bus_id) == *address) gpu_uuid = g.uuid;
    } else if (gpu_uuid.empty()) {  // a DynamicMIG partition without uuid: by its parent's name prefix
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
