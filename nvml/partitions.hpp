#pragma once
// DynamicMIG publishing (upstream partitions.go; upstream-driver.md §2.4, §1.1): a dynamic-MIG
// capable GPU is published as its full GPU (not on pre-Hopper GPUs in MIG mode) plus one abstract
// MIG device per (profile, possible placement), every device consuming counters from the GPU's
// counter set, so the scheduler never over-commits a GPU. Pure; the claims code uses the same
// names to find what to create at prepare.
#include <string>
#include <vector>

#include "agent/base/device.hpp"
#include "nvml/device_model.hpp"

namespace nvdra::nvml {

inline constexpr unsigned kVirtualizationVgpu = 2;  // NVML_GPU_VIRTUALIZATION_MODE_VGPU

// Hopper and newer switch MIG mode without a GPU reset; upstream toggles it only on these.
bool hopper_or_newer(const GpuInfo& gpu);
// MIG capable, not a vGPU guest, and Hopper+ or (pre-Hopper) already in MIG mode.
bool dynamic_mig_capable(const GpuInfo& gpu);
// "gpu-<minor>-counter-set"
std::string counter_set_name(const GpuInfo& gpu);

// One MIG device prepare may create: GI profile (with its full-size CI) at a placement.
struct PossibleMigDevice {
  std::string name;  // gpu-<minor>-mig-<profile'>-<profileId>-<start>, as static MIG names it
  MigProfileInfo profile;
  MigPlacement placement;
};
// Every (profile, placement) of a dynamic-MIG capable GPU, in profile then placement order.
std::vector<PossibleMigDevice> possible_mig_devices(const GpuInfo& gpu);

// What gpu.nvidia.com publishes for the model. dynamic_mig false: published_gpu_devices(model)
// and no counters. true: dynamic-MIG capable GPUs as above, with their counter sets in PCI bus
// id order; other GPUs as without the gate.
DriverResources published_gpu_resources(const DeviceModel& model, bool dynamic_mig);

}  // namespace nvdra::nvml
