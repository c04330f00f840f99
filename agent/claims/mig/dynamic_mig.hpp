#pragma once
// DynamicMig — creates and destroys the MIG devices of DynamicMIG claims (upstream-driver.md
// §12.2, §6.3–6.4) through the NVML seam, on the worker pool, awaited, one change at a time per
// GPU (GpuLocks) and different GPUs in parallel.
//  * create: MIG mode on first where it is off (Hopper+ only: upstream never toggles MIG on Ampere,
//    which is DynamicMIG-capable only when already in MIG mode), then GI at the allocated
//    placement and its full-size CI.
//  * destroy: CI then GI, already gone = success; on Hopper+ MIG mode goes off when the GPU has
//    no MIG device left (a failure there is logged, the destroy still counts).
// Thread: the claims pipeline's io_context thread. `library` must outlive this object.
#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/claim/gpu_inventory.hpp"
#include "agent/claims/mig/gpu_locks.hpp"
#include "nvml/gpu_library.hpp"
#include "agent/base/metrics_sink.hpp"

namespace nvdra::runtime {
class WorkerPool;
}

namespace nvdra::claims {

class DynamicMig {
 public:
  DynamicMig(runtime::WorkerPool& pool, nvml::GpuLibrary& library, metrics::Sink& metrics = metrics::null_sink())
      : pool_(pool), library_(library), metrics_(metrics) {}

  // `device` is a dynamic inventory device (InventoryDevice::dynamic).
  boost::asio::awaitable<Result<nvml::MigDeviceInfo>> create(const InventoryDevice& device);
  // Destroys the instance (gi_id, ci_id) on the device's parent GPU.
  boost::asio::awaitable<Status> destroy(const InventoryDevice& device, unsigned gi_id, unsigned ci_id);
  // Destroys whatever MIG device now carries `device`'s name (its profile at its placement), or a
  // bare GPU instance there (a create cut off between GI and CI): rollback of a prepare that may or
  // may not have created it.
  boost::asio::awaitable<Status> destroy_by_name(const InventoryDevice& device);
  // The MIG devices that exist on a GPU now.
  boost::asio::awaitable<Result<std::vector<nvml::MigDeviceInfo>>> list(const std::string& gpu_uuid);
  // Destroys one existing instance of `gpu` found by list() (start-up clean-up of orphans).
  boost::asio::awaitable<Status> destroy_instance(const DynamicGpu& gpu, const nvml::MigDeviceInfo& mig);
  // Destroys every GPU instance of `gpu` that holds no compute instance (start-up: no completed
  // claim owns one). Returns the device names they would have carried; failures go to `errors`.
  boost::asio::awaitable<std::vector<std::string>> destroy_bare_instances(const DynamicGpu& gpu,
                                                                          std::vector<Error>& errors);
  // Hopper+: MIG mode off when the GPU has no MIG device (start-up, after orphans are gone).
  boost::asio::awaitable<Status> disable_if_unused(const DynamicGpu& gpu);

 private:
  Status destroy_locked(const std::string& gpu_uuid, bool hopper, unsigned gi_id, unsigned ci_id);
  void disable_if_unused_locked(const std::string& gpu_uuid, bool hopper);

  runtime::WorkerPool& pool_;
  nvml::GpuLibrary& library_;
  metrics::Sink& metrics_;  // MIG devices created/destroyed
  GpuLocks locks_;
};

}  // namespace nvdra::claims
