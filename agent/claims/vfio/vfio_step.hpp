#pragma once
// VfioStep — the PassthroughSupport part of a gpu.nvidia.com claim (upstream-driver.md §2.3, §5.1,
// §12.2): hands a GPU (and the other functions of the card in its IOMMU group) from nvidia to
// vfio-pci at prepare and back at unprepare, and builds the claim's VFIO CDI edits.
//
// hand_over: already on vfio-pci → nothing to do (another tool, or a prepare cut short after the
// bind); on nvidia → wait, until the claim's deadline, until no host process holds /dev/nvidia<minor>
// (then an error naming them, instead of the endless wait upstream's users hit), unbind, set
// driver_override=vfio-pci, drivers_probe, and confirm the kernel bound vfio-pci (bind_deadline).
// give_back: the reverse (override cleared, so the default driver nvidia binds), then wait until
// NVML sees the GPU again and hand the rediscovered model to on_gpu_back. Both are idempotent
// from any intermediate state, so a rerun after a crash converges. Sysfs and NVML calls run on
// the WorkerPool; waits are timers on the caller's executor, cancellable.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/claims/claim/gpu_inventory.hpp"
#include "agent/claims/claim/metadata_files.hpp"
#include "agent/claims/config/opaque_config.hpp"
#include "agent/claims/vfio/pci_binder.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "cdi/spec_model.hpp"
#include "nvml/call_gate.hpp"

namespace nvdra::runtime {
class WorkerPool;
}

namespace nvdra::claims {

struct VfioStepOptions {
  // Inside kubelet's 45 s NodePrepareResources deadline, with room for the rest of the prepare.
  std::chrono::milliseconds busy_deadline{20000};
  std::chrono::milliseconds bind_deadline{10000};
  std::chrono::milliseconds busy_poll{250};
  std::chrono::milliseconds bind_poll{5};
  bool iommufd = false;  // /dev/iommu exists on the host
  // False on a host without the NVIDIA driver: give_back leaves the GPU on vfio-pci (as upstream).
  bool nvidia_enabled = true;
  // On the worker pool: the node rediscovered through NVML when it sees the GPU at `address`
  // (sysfs form), nullopt while it does not.
  std::function<Result<std::optional<nvml::DeviceModel>>(const std::string& address)> rediscover;
  // On the worker pool, before a GPU leaves nvidia: this agent's NVML session lets go of every GPU
  // (GpuLibrary::release_gpus), so that the agent holds no /dev/nvidia<minor> the unbind would wait for,
  // and no other NVML call of the agent attaches one again until the Shut is dropped (the GPU has left
  // nvidia). The argument says why, for the calls refused meanwhile.
  std::function<Result<nvml::CallGate::Shut>(const std::string& why)> release_gpus;
  // Persistence mode, as upstream: before a GPU leaves nvidia, when nvidia-persistenced runs (its
  // socket exists) it is asked to let go of the GPU (nvidia-smi -pm 0; it holds every GPU open);
  // when the GPU is back on nvidia and NVML sees it, persistence is turned on through NVML.
  std::string persistenced_socket;
  std::function<Status(const std::string& address)> disable_persistence;
  std::function<Status(const std::string& gpu_uuid)> enable_persistence;
  // On the caller's thread: NVML sees the GPU again; `model` is the rediscovered node.
  std::function<void(const nvml::DeviceModel& model)> on_gpu_back;
  // DeviceMetadata (KEP-5304): where the claims' metadata files go (<plugins dir>/gpu.nvidia.com/
  // dra-device-metadata; empty: gate off, nothing written) and the published form of a VFIO device.
  std::string metadata_root;
  std::function<std::optional<PublishedDevice>(const std::string& name)> published;
};

// The two faces of one GPU (gpu-<minor>, gpu-vfio-<index>) are never prepared at once: a result
// whose twin another claim in the checkpoint holds (started or completed) is refused, naming both.
Status check_twins_free(const Checkpoint& checkpoint, const std::string& uid,
                        const std::vector<AllocationResult>& results, const GpuInventory& inventory);

// The published names withdrawn while their twin is prepared (or being prepared) by some claim.
std::vector<std::string> withdrawn_twins(const Checkpoint& checkpoint, const GpuInventory& inventory);

class VfioStep {
 public:
  VfioStep(runtime::WorkerPool& pool, PciBinder& binder, VfioStepOptions options);

  using Deadline = std::chrono::steady_clock::time_point;
  // One wait for busy GPUs per claim (busy_deadline from now): every GPU of the claim is waited for
  // until the same instant, so a claim of several GPUs still ends inside kubelet's 45 s.
  Deadline claim_deadline() const;
  // Binds `device` (kVfio) to vfio-pci, waiting for its holders until `busy_until`; returns its
  // iommufd cdev name ("" when none).
  boost::asio::awaitable<Result<std::string>> hand_over(const InventoryDevice& device, Deadline busy_until);
  boost::asio::awaitable<Result<std::string>> hand_over(const InventoryDevice& device) {
    return hand_over(device, claim_deadline());
  }
  boost::asio::awaitable<Status> give_back(const InventoryDevice& device);

  // Upstream's VFIO claim edits: spec level NVIDIA_VISIBLE_DEVICES=void, plus the VFIO API device
  // only with enableAPIDevice (/dev/iommu with PreferIommuFD on an iommufd host, else /dev/vfio/vfio);
  // per device /dev/vfio/devices/<cdev> (PreferIommuFD on an iommufd host) or /dev/vfio/<group>.
  cdi::ContainerEdits claim_edits(const VfioDeviceConfig& config) const;
  Result<cdi::ContainerEdits> device_edits(const InventoryDevice& device, const VfioDeviceConfig& config,
                                           const std::string& cdev) const;

  // DeviceMetadata: on with a metadata root. The checkpoint's Metadata of a VFIO device (empty
  // when off or unpublished); the claim's metadata files (blocking; their mounts join the
  // spec-level edits) and their removal at unprepare/rollback (missing is fine).
  bool metadata_enabled() const { return !options_.metadata_root.empty(); }
  boost::json::object checkpoint_metadata(const std::string& device) const;
  // `pod_claim_name`: the claim's pod-claim-name annotation (made from a template), if any.
  Result<std::vector<cdi::Mount>> write_metadata(const kubelet::ClaimRef& claim,
                                                 const std::optional<std::string>& pod_claim_name,
                                                 std::vector<MetadataDevice> devices) const;
  Status remove_metadata(const kubelet::ClaimRef& claim) const;

 private:
  boost::asio::awaitable<Status> rebind(const std::string& address, const std::string& from, const std::string& to,
                                        const std::string& what);
  boost::asio::awaitable<Status> wait_for_driver(const std::string& address, const std::string& driver,
                                                 const std::string& what);
  boost::asio::awaitable<Status> wait_until_free(const InventoryDevice& device, Deadline deadline);
  // NVML's hold on the GPUs let go, and kept off them while the result lives (nullopt: no NVML).
  boost::asio::awaitable<Result<std::optional<nvml::CallGate::Shut>>> release_own_hold(const InventoryDevice& device);
  boost::asio::awaitable<Status> disable_persistence(const InventoryDevice& device);

  runtime::WorkerPool& pool_;
  PciBinder& binder_;
  VfioStepOptions options_;
};

}  // namespace nvdra::claims
