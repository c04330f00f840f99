#pragma once
// Discovery: builds the device model from the NVML seam plus the two facts NVML does not have
// (PCIe root and NUMA node, from sysfs), as upstream's gpu plugin does (upstream-driver.md §2.1,
// §12.2). Blocking: run it on the worker pool.
#include <string>

#include "agent/base/result.hpp"
#include "nvml/device_model.hpp"
#include "nvml/gpu_library.hpp"

namespace nvdra::nvml {

struct DiscoveryOptions {
  std::string sysfs_root = "/sys";  // <root>/bus/pci/devices/<bdf>; tests point it at a fake tree
};

// Every GPU in NVML index order with its MIG profiles (MIG-capable GPUs) and existing MIG devices
// (MIG enabled). GPUs named "DGX Display" are skipped, as go-nvlib does. Any NVML failure fails
// discovery with the call and device named.
Result<DeviceModel> discover(GpuLibrary& library, const DiscoveryOptions& options = {});

// The node's NVLink clique "<clusterUuid>.<cliqueId>" (upstream-driver.md §9.2): "" when no GPU is
// in a multi-node clique; an error when GPUs disagree. `strict` (upstream's CrashOnNVLinkFabricErrors,
// on by default) also fails when a GPU's fabric is not ready (state != COMPLETED or status !=
// SUCCESS); the legacy mode skips such GPUs, as go-nvlib's IsFabricAttached does.
Result<std::string> clique_id(const DeviceModel& model, bool strict = true);

// Why the node's clique cannot be told yet because a GPU's fabric is still registering (state
// NOT_STARTED or IN_PROGRESS, upstream #1264: it reaches COMPLETED later without a restart), or "".
std::string fabric_registering(const DeviceModel& model);

}  // namespace nvdra::nvml
