#pragma once
// GpuInventory — the devices this node publishes for gpu.nvidia.com (full GPUs and static MIG
// devices), indexed by published device name, with what the claims pipeline needs per device: the
// type for config resolution, the facts CDI edits take and the UUIDs for sharing. Built once from
// the discovered model; immutable afterwards, so safe to read from any thread.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/config_resolver.hpp"
#include "nvml/device_model.hpp"
#include "nvml/gpu_library.hpp"

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
