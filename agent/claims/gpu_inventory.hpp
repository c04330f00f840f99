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
};

class GpuInventory {
 public:
  GpuInventory() = default;
  // The devices published_gpu_devices(model) names, and nothing else.
  explicit GpuInventory(const nvml::DeviceModel& model);

  const InventoryDevice* find(const std::string& name) const;
  // Published names, sorted.
  std::vector<std::string> names() const;
  std::size_t size() const { return devices_.size(); }

 private:
  std::map<std::string, InventoryDevice> devices_;
};

}  // namespace nvdra::claims
