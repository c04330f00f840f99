#pragma once
// The node's NVIDIA Fabric Manager as the gpu.nvidia.com driver sees it: whether the node has
// NVSwitches (upstream: /proc/driver/nvidia-nvswitch/devices non-empty, or an InfiniBand device
// whose VPD says SW_MNG), the FM connection (libnvfm.so.1 under the driver root, endpoint from
// upstream's NVIDIA_FABRICMANAGER_* environment) and its partition table; and the attributes
// upstream publishes from it (gpuModuleID, partition1/2/4/8).
#include <string>

#include "agent/base/device.hpp"
#include "agent/claims/fabric_partitions.hpp"
#include "nvml/device_model.hpp"

namespace nvdra::config { struct Options; }

namespace nvdra::drivers {

// Blocking (file reads, dlopen, FM round trips): call on the worker pool. Never fails: a node
// without NVSwitches or without a reachable FM gets a session saying why (session.unavailable).
claims::FabricSession open_fabric_session(const config::Options& options, const nvml::DeviceModel& model);

// gpuModuleID on every full GPU and MIG device with a module id, and partitionN = the id of the FM
// partition of N GPUs holding the (parent) GPU; nothing when the session has no table.
void add_fabric_attributes(DriverResources& resources, const claims::FabricSession& session,
                           const nvml::DeviceModel& model);

}  // namespace nvdra::drivers
