#pragma once
// FabricManager — the NVSwitch fabric-partition seam (NVIDIA Fabric Manager's Shared NVSwitch API,
// libnvfm.so.1). Everything nvdra asks of FM goes through this interface: the supported partitions
// with their GPUs (by module id) and active state, activate, deactivate. FM types never cross it.
//
// Contract:
//  * Calls are synchronous and may block (a round trip to the FM daemon); they are thread-safe. The
//    agent calls them on the worker pool, bounded by a deadline (agent/claims/fabric/fabric_partitions.hpp).
//  * open_fabric_manager() dlopens libnvfm.so.1, fmLibInit()s and fmConnect()s once; the object
//    fmDisconnect()s, fmLibShutdown()s and dlcloses when destroyed.
//  * Errors name the FM call, the partition and FM's return code by name (FM_ST_IN_USE (-7)).
//    Codes: BADPARAM -> kInvalidArgument, NOT_SUPPORTED / NOT_CONFIGURED -> kFailedPrecondition,
//    IN_USE / TIMEOUT / CONNECTION_NOT_VALID / NVLINK_ERROR -> kUnavailable, others kInternal.
//  * activate() of an active partition and deactivate() of an inactive one succeed (FM answers
//    IN_USE / UNINITIALIZED; the binding checks the partition's state and treats it as done), so a
//    step repeated after a crash converges.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::fm {

struct PartitionGpu {
  unsigned module_id = 0;  // FM's physicalId: the GPU's module id (nvmlDeviceGetModuleId)
  unsigned nvlinks_available = 0;
  unsigned nvlinks_max = 0;
  unsigned nvlink_rate_mbps = 0;  // per link, MB/s, as FM reports it
  bool operator==(const PartitionGpu&) const = default;
};

struct Partition {
  unsigned id = 0;
  bool active = false;
  std::vector<PartitionGpu> gpus;
  std::vector<unsigned> module_ids() const;  // sorted
  // NVLink bandwidth per GPU in GB/s (both directions, as NVIDIA quotes 900 GB/s for H100): the
  // smallest over the partition's GPUs of links available x line rate x 2 / 1000; 0 for a lone GPU.
  double nvlink_bandwidth_gbps() const;
  bool overlaps(const Partition& other) const;
  bool operator==(const Partition&) const = default;
};

// "FM_ST_IN_USE (-7)", for every code of nv_fm_types.h (0 to -29); any other as "FM return code <n>".
std::string return_code_name(int rc);

class FabricManager {
 public:
  virtual ~FabricManager() = default;
  virtual Result<std::vector<Partition>> partitions() = 0;
  virtual Status activate(unsigned partition_id) = 0;
  virtual Status deactivate(unsigned partition_id) = 0;
  // Where it is connected ("unix:/run/nvidia-fabricmanager/socket", "tcp:127.0.0.1"), for logs.
  virtual std::string endpoint() const = 0;
};

// How to reach FM, from upstream's environment: NVIDIA_FABRICMANAGER_ADDRESS set (even empty) →
// TCP to that address ("" → 127.0.0.1, port FM_CMD_PORT_NUMBER unless "host:port"); else the unix
// socket NVIDIA_FABRICMANAGER_UNIX_SOCKET (default <driver root>/run/nvidia-fabricmanager/socket).
struct Endpoint {
  std::string address;
  bool unix_socket = true;
};

struct LoadOptions {
  std::string library_path;  // "" → libnvfm.so.1 under driver_root (fm_library_locator.hpp)
  std::string driver_root = "/";
  Endpoint endpoint;
  std::chrono::milliseconds connect_timeout{5000};
};

Result<std::unique_ptr<FabricManager>> open_fabric_manager(const LoadOptions& options);

// The partitions of an 8-GPU HGX H100/H200 baseboard in Shared NVSwitch mode (FM user guide; `fmpm -l`),
// by module id: 0 [1..8]; 1 [1 2 3 4], 2 [5 6 7 8]; 3 [1 3], 4 [2 4], 5 [5 7], 6 [6 8]; 7..14 [1]..[8].
// Every GPU with `links` NVLinks at `rate_mbps` in multi-GPU partitions. Shared by the fake and the
// mock's built-in table.
std::vector<Partition> hgx8_partitions(unsigned links = 18, unsigned rate_mbps = 25000);

}  // namespace nvdra::fm
