#include "agent/claims/gpu_inventory.hpp"

#include <set>

#include "nvml/published_devices.hpp"

namespace nvdra::claims {

GpuInventory::GpuInventory(const nvml::DeviceModel& model) {
  // published_gpu_devices decides what is published (MIG mode, C==G profiles); index only those
  // so a claim can name nothing the node does not offer.
  std::set<std::string> published;
  for (const auto& d : nvml::published_gpu_devices(model)) published.insert(d.name);
  for (const auto& gpu : model.gpus) {
    InventoryDevice full{gpu.canonical_name(), DeviceType::kGpu, gpu.uuid, gpu.minor, gpu.pci.bus_id,
                         0, 0, 0, "", gpu.cuda_cc_major};
    if (published.count(full.name)) devices_.emplace(full.name, full);
    for (const auto& mig : gpu.mig_devices) {
      InventoryDevice dev{mig.canonical_name(), DeviceType::kMig, mig.uuid, mig.parent_minor, gpu.pci.bus_id,
                          mig.parent_minor, mig.gi_id, mig.ci_id, mig.parent_uuid, gpu.cuda_cc_major};
      if (published.count(dev.name)) devices_.emplace(dev.name, dev);
    }
  }
}

const InventoryDevice* GpuInventory::find(const std::string& name) const {
  auto it = devices_.find(name);
  return it == devices_.end() ? nullptr : &it->second;
}

std::vector<std::string> GpuInventory::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : devices_) out.push_back(name);
  return out;
}

}  // namespace nvdra::claims
