#pragma once
// The node's NVIDIA Fabric Manager as the gpu.nvidia.com driver sees it: whether the node has
// NVSwitches (upstream: /proc/driver/nvidia-nvswitch/devices non-empty, or an InfiniBand device
// whose VPD says SW_MNG), the FM connection (libnvfm.so.1 under the driver root, endpoint from
// upstream's NVIDIA_FABRICMANAGER_* environment) and its partition table; and the attributes
// upstream publishes from it (gpuModuleID, partition1/2/4/8).
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "agent/base/device.hpp"
#include "agent/claims/fabric/fabric_partitions.hpp"
#include "nvml/device_model.hpp"

namespace nvdra::config { struct Options; }
namespace nvdra::status { class AgentStatus; }

namespace nvdra::drivers {

// Blocking (file reads): call on the worker pool. The GPUs' module ids and whether FM is expected
// (NVSwitches found); `load` says how to reach FM, or nullopt with session.unavailable saying why not.
struct FabricProbe {
  claims::FabricSession session;
  std::optional<fm::LoadOptions> load;
};
FabricProbe probe_fabric(const config::Options& options, const nvml::DeviceModel& model);

// dlopen + fmConnect + fmGetSupportedFabricPartitions: blocking, and FM may not answer — run it
// through FabricPartitions::connect (FM's thread, bounded by its deadline).
claims::FmOpener fabric_manager_opener(fm::LoadOptions load);

// Start-up: connects through `fabric` (FM's thread, bounded: an FM that hangs cannot hang the start).
// Returns the opener to retry with when FM is expected but did not answer (logged, and recorded as a
// status error of the gpu driver); an empty one when connected or when no FM is expected here.
boost::asio::awaitable<claims::FmOpener> connect_at_start(claims::FabricPartitions& fabric,
                                                          std::optional<fm::LoadOptions> load,
                                                          status::AgentStatus& status);

// gpuModuleID on every full GPU, MIG device and VFIO device (upstream §2.3: copied from the parent
// GPU, found by PCI address) with a module id, and partitionN = the id of the FM partition of N GPUs
// holding the (parent) GPU; nothing when the session has no table.
void add_fabric_attributes(DriverResources& resources, const claims::FabricSession& session,
                           const nvml::DeviceModel& model);

}  // namespace nvdra::drivers
