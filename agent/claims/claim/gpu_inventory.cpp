#include "agent/claims/claim/gpu_inventory.hpp"

#include <set>

#include "nvml/partitions.hpp"
#include "nvml/published_devices.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::claims {

GpuInventory::GpuInventory(const nvml::DeviceModel& model) : GpuInventory(model, false) {}

GpuInventory::GpuInventory(const nvml::DeviceModel& model, bool dynamic_mig) {
  // published_gpu_resources decides what is published (MIG mode, C==G profiles, DynamicMIG);
  // index only those so a claim can name nothing the node does not offer.
  std::set<std::string> published;
  for (const auto& d : nvml::published_gpu_resources(model, dynamic_mig).devices) published.insert(d.name);
  for (const auto& gpu : model.gpus) {
    if (dynamic_mig && nvml::dynamic_mig_capable(gpu)) {
      const bool hopper = nvml::hopper_or_newer(gpu);
      dynamic_gpus_.push_back(DynamicGpu{gpu.uuid, gpu.minor, hopper});
      InventoryDevice full{gpu.canonical_name(), DeviceType::kGpu, gpu.uuid, gpu.minor, gpu.pci.bus_id,
                           0, 0, 0, "", gpu.cuda_cc_major};
      if (published.count(full.name)) devices_.emplace(full.name, full);
      // Existing instances are not devices here: their names are the possible devices' names.
      for (const auto& m : nvml::possible_mig_devices(gpu)) {
        InventoryDevice dev{m.name, DeviceType::kMig, "", gpu.minor, gpu.pci.bus_id, gpu.minor, 0, 0, gpu.uuid,
                            gpu.cuda_cc_major};
        dev.dynamic = true;
        dev.mig_request = nvml::MigDeviceRequest{m.profile.gi_profile_id, m.placement.start, m.profile.ci_profile_id,
                                                 m.profile.ci_engine_profile_id};
        dev.parent_hopper = hopper;
        devices_.emplace(dev.name, dev);
      }
      continue;
    }
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

void GpuInventory::add_vfio(const std::vector<nvml::PciGpu>& pci, const nvml::DeviceModel& model) {
  for (std::size_t i = 0; i < pci.size(); ++i) {
    const auto& p = pci[i];
    if (!p.unavailable.empty()) continue;
    InventoryDevice dev;
    dev.name = nvml::vfio_device_name(static_cast<unsigned>(i));
    dev.type = DeviceType::kVfio;
    dev.uuid = nvml::vfio_uuid(p.address);
    dev.pci_bus_id = p.address;
    dev.iommu_group = p.iommu_group.value_or(0);
    for (const auto& f : p.group_peers)
      if (f.same_slot) dev.group_functions.push_back(f.address);
    bool mig = false;
    for (const auto& g : model.gpus) {
      if (nvml::normalize_bus_id(g.pci.bus_id) != p.address) continue;
      mig = g.mig_enabled;  // upstream: a VFIO twin only for GPUs without MIG devices
      dev.minor = g.minor, dev.has_minor = true, dev.twin = g.canonical_name();
      if (auto it = devices_.find(dev.twin); it != devices_.end()) it->second.twin = dev.name;
    }
    if (!mig) devices_.emplace(dev.name, std::move(dev));
  }
}

void GpuInventory::add_gpu(const nvml::GpuInfo& gpu) {
  InventoryDevice full{gpu.canonical_name(), DeviceType::kGpu, gpu.uuid, gpu.minor, gpu.pci.bus_id,
                       0, 0, 0, "", gpu.cuda_cc_major};
  for (auto& [name, d] : devices_)
    if (d.type == DeviceType::kVfio && d.pci_bus_id == nvml::normalize_bus_id(gpu.pci.bus_id)) {
      d.twin = full.name, d.minor = gpu.minor, d.has_minor = true;
      full.twin = name;
    }
  devices_.emplace(full.name, std::move(full));
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
