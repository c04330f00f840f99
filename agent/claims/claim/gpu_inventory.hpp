#pragma once
// GpuInventory — the devices this node publishes for gpu.nvidia.com (full GPUs, MIG devices, VFIO
// devices), indexed by published device name, with what the claims pipeline needs per device: the
// type for config resolution, the facts CDI edits take and the UUIDs for sharing. Built once from
// the discovered model; afterwards only added to (VFIO twins, GPUs NVML sees again), on the
// io_context thread; existing entries never move.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/config/config_resolver.hpp"
#include "nvml/device_model.hpp"
#include "nvml/gpu_library.hpp"
#include "nvml/pci_gpus.hpp"

namespace nvdra::claims {

struct InventoryDevice {
  std::string name;  // published name: "gpu-0", "gpu-6-mig-3g20gb-9-0"
  DeviceType type = DeviceType::kGpu;
  std::string uuid;         // GPU-… or MIG-…
  unsigned minor = 0;       // full GPU: /dev/nvidia<minor>
  std::string pci_bus_id;   // full GPU: NVML form as published ("0000:07:00.0")
  unsigned parent_minor = 0;  // MIG only, with gi_id/ci_id and the parent's UUID
  unsigned gi_id = 0, ci_id = 0;
  std::string parent_uuid;
  int cuda_cc_major = 0;    // of the (parent) GPU: MPS multi-user needs >= 7
  // DynamicMIG: a MIG device created at prepare (uuid, gi_id and ci_id unknown until then).
  bool dynamic = false;
  nvml::MigDeviceRequest mig_request;  // GI profile ID, placement start, full-size CI profile
  bool parent_hopper = false;          // MIG mode may be toggled on the parent (Hopper+)
  // PassthroughSupport. A VFIO device (kVfio): pci_bus_id is the sysfs address ("0000:18:00.0"),
  // uuid upstream's VFIO uuid; the functions of the same card in its IOMMU group move with it.
  unsigned iommu_group = 0;
  std::vector<std::string> group_functions;
  bool has_minor = false;  // VFIO: NVML saw the GPU at start, `minor` is its /dev/nvidia<minor>
  std::string twin;        // the other face of the same GPU: gpu-<minor> <-> gpu-vfio-<index>
};

// A GPU whose MIG devices DynamicMIG creates and destroys.
struct DynamicGpu {
  std::string uuid;
  unsigned minor = 0;
  bool hopper = false;
};

class GpuInventory {
 public:
  GpuInventory() = default;
  // The devices published_gpu_devices(model) names, and nothing else.
  explicit GpuInventory(const nvml::DeviceModel& model);
  // With dynamic_mig: the devices nvml::published_gpu_resources(model, true) names, the possible
  // MIG devices of dynamic-MIG capable GPUs marked `dynamic`.
  GpuInventory(const nvml::DeviceModel& model, bool dynamic_mig);

  const InventoryDevice* find(const std::string& name) const;
  // PassthroughSupport: a gpu-vfio-<index> device per GPU of `pci` that can be handed over whole
  // and has no MIG device, twinned with the full GPU of the same PCI address. Adding keeps every
  // existing device where it is (pointers stay valid), so it may run between prepares.
  void add_vfio(const std::vector<nvml::PciGpu>& pci, const nvml::DeviceModel& model);
  // A GPU NVML sees again after it went back to nvidia: its full GPU, twinned as before.
  void add_gpu(const nvml::GpuInfo& gpu);
  // Published names, sorted.
  std::vector<std::string> names() const;
  std::size_t size() const { return devices_.size(); }
  // The GPUs with dynamic devices (empty without DynamicMIG).
  const std::vector<DynamicGpu>& dynamic_gpus() const { return dynamic_gpus_; }

 private:
  std::map<std::string, InventoryDevice> devices_;
  std::vector<DynamicGpu> dynamic_gpus_;
};

}  // namespace nvdra::claims
