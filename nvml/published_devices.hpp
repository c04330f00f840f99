#pragma once
// The devices driver gpu.nvidia.com publishes for a device model, with upstream's device names,
// attribute names, value types and capacities (upstream-driver.md §1.2, §2.1, §2.2) — full GPUs
// and static MIG devices (DynamicMIG partitions: nvml/partitions.hpp). Pure; the ResourceSlice
// publisher serialises the result.
#include <vector>

#include "agent/base/device.hpp"
#include "nvml/device_model.hpp"

namespace nvdra::nvml {

inline constexpr const char* kGpuDriverName = "gpu.nvidia.com";

// A GPU with MIG disabled is published as gpu-<minor>; a GPU with MIG enabled publishes only its
// MIG devices (none if it has none, as upstream). MIG devices whose compute instance is smaller than
// their GPU instance are left out (upstream matches only C == G profiles).
std::vector<PublishedDevice> published_gpu_devices(const DeviceModel& model);

PublishedDevice published_gpu(const GpuInfo& gpu, const SystemInfo& system);
PublishedDevice published_mig(const MigDeviceInfo& mig, const GpuInfo& parent, const SystemInfo& system);
// A DynamicMIG device that does not exist yet: a MIG device's attributes without `uuid`, its
// profile's capacities without memorySlice* (those become counters, nvml/partitions.hpp).
PublishedDevice published_dynamic_mig(const GpuInfo& parent, const MigProfileInfo& profile, const MigPlacement& placement,
                                      const SystemInfo& system);

}  // namespace nvdra::nvml
