#include <algorithm>
#include <filesystem>

#include "agent/base/log.hpp"
#include "agent/claims/sharing/time_slicing.hpp"
#include "agent/claims/vfio/vfio_step.hpp"
#include "agent/drivers/gpu_backend_parts.hpp"
#include "nvml/consumable_shares.hpp"
#include "nvml/discovery.hpp"
#include "nvml/published_devices.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::drivers {
namespace fs = std::filesystem;

// PassthroughSupport at start, on the worker pool: the host must have IOMMU groups and vfio-pci;
// the PCI GPUs are read from sysfs (NVML does not see those already on vfio-pci).
Status open_passthrough(GpuBackend::Parts& p, const config::Options& o) {
  auto log = logger(config::kGpuDriverName);
  const fs::path host(o.host_root);
  std::error_code ec;
  if (!fs::exists(host, ec))  // upstream's flag check, before IOMMU (else reported as "IOMMU is not enabled")
    return make_error(ErrorCode::kFailedPrecondition,
                      "PassthroughSupport: host root is not mounted at \"" + o.host_root +
                          "\" (--host-root, HOST_ROOT): mount the host's / there, or leave the gate off");
  if (!nvml::iommu_enabled(o.host_root))
    return make_error(ErrorCode::kFailedPrecondition,
                      "PassthroughSupport: IOMMU is not enabled in the kernel (" + (host / "sys/kernel/iommu_groups").string() +
                          " is empty): boot the host with intel_iommu=on or amd_iommu=on, or leave the gate off");
  if (!fs::is_directory(host / "sys/module/vfio_pci", ec))
    return make_error(ErrorCode::kFailedPrecondition,
                      "PassthroughSupport: the vfio-pci module is not loaded (" + (host / "sys/module/vfio_pci").string() +
                          " is missing): run modprobe vfio-pci on the host (or list it in /etc/modules-load.d)");
  auto pci = nvml::scan_pci_gpus(nvml::PciScanOptions{o.host_root});
  if (!pci) return pci.error();
  p.pci = std::move(*pci);
  p.iommufd = nvml::iommufd_enabled(o.host_root);
  for (std::size_t i = 0; i < p.pci.size(); ++i) {
    const auto& g = p.pci[i];
    if (!g.unavailable.empty())
      log->warn("gpu={} {} not published: {}", g.address, nvml::vfio_device_name(static_cast<unsigned>(i)), g.unavailable);
    else if (g.driver == nvml::kVfioPciDriver)
      log->info("gpu={} {} is already bound to vfio-pci: published as VFIO only, not re-bound", g.address,
                nvml::vfio_device_name(static_cast<unsigned>(i)));
  }
  p.inventory.add_vfio(p.pci, p.model);
  p.binder = claims::make_sysfs_pci_binder(o.host_root);
  return {};
}

// GPU i's VFIO twin as published. Upstream (addNumaNodeAttribute, for GPUs, MIG and VFIO devices
// alike) makes numaNode a one-element list under DRAListTypeAttributes.
PublishedDevice published_vfio(const GpuBackend::Parts& p, std::size_t i, bool list_attributes) {
  auto d = nvml::published_vfio(p.pci[i], static_cast<unsigned>(i), p.iommufd);
  if (list_attributes) nvml::use_list_attributes(d);
  return d;
}

void GpuBackend::wire_passthrough(Parts& p, claims::GpuClaimHandlerOptions& ho, const config::Options& o) {
  ho.pci = p.binder.get();
  ho.vfio.iommufd = p.iommufd;
  if (o.gates.enabled(config::gate::kDeviceMetadata)) {  // upstream: VFIO devices only
    ho.vfio.metadata_root = (fs::path(o.kubelet_plugins_dir) / config::kGpuDriverName / "dra-device-metadata").string();
    ho.vfio.published = [&p, lists = o.gates.enabled(config::gate::kDRAListTypeAttributes)](
                            const std::string& name) -> std::optional<PublishedDevice> {
      for (std::size_t i = 0; i < p.pci.size(); ++i)
        if (nvml::vfio_device_name(static_cast<unsigned>(i)) == name) return published_vfio(p, i, lists);
      return std::nullopt;
    };
  }
  ho.vfio.nvidia_enabled = p.gpus->library != nullptr;
  ho.on_devices_changed = [this] {
    if (parts_ && resources_changed_) resources_changed_(current_resources());
  };
  if (!ho.vfio.nvidia_enabled) return;
  ho.vfio.release_gpus = [lib = p.gpus->library.get()](const std::string& why) { return lib->release_gpus(why); };
  ho.vfio.persistenced_socket = (fs::path(o.container_driver_root) / "run/nvidia-persistenced/socket").string();
  ho.vfio.disable_persistence = [smi = claims::NvidiaSmi(o.nvidia_driver_root)](const std::string& address) {
    return smi.set_persistence_mode(address, false);
  };
  ho.vfio.enable_persistence = [lib = p.gpus->library.get()](const std::string& uuid) {
    return lib->enable_persistence(uuid);
  };
  // NVML is asked again after a GPU went back to nvidia: its full GPU is published once NVML has it.
  ho.vfio.rediscover = [lib = p.gpus->library.get(), sysfs = (fs::path(o.host_root) / "sys").string()](
                           const std::string& address) -> Result<std::optional<nvml::DeviceModel>> {
    auto model = nvml::discover(*lib, nvml::DiscoveryOptions{sysfs});
    if (!model) return model.error();
    for (const auto& g : model->gpus)
      if (nvml::normalize_bus_id(g.pci.bus_id) == address) return std::optional(std::move(*model));
    return std::optional<nvml::DeviceModel>();
  };
  ho.vfio.on_gpu_back = [&p](const nvml::DeviceModel& model) {
    for (const auto& g : model.gpus)
      if (std::none_of(p.model.gpus.begin(), p.model.gpus.end(), [&](const auto& k) { return k.uuid == g.uuid; })) {
        p.model.gpus.push_back(g);
        p.inventory.add_gpu(g);
      }
  };
}

}  // namespace nvdra::drivers
