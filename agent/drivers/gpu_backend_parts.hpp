#pragma once
// GpuBackend's insides, shared by gpu_backend.cpp (start, resources) and gpu_backend_passthrough.cpp
// (PassthroughSupport's start checks, VFIO twins and the VFIO step's wiring). Not a seam: only the
// backend's own files include it.
#include <memory>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/claims/checkpoint/checkpoint_startup.hpp"
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/claim/gpu_inventory.hpp"
#include "agent/claims/sharing/mps_manager.hpp"
#include "agent/claims/vfio/pci_binder.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/api_claim_source.hpp"
#include "agent/drivers/device_health_monitor.hpp"
#include "agent/drivers/gpu_backend.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "cdi/driver_edits.hpp"
#include "cdi/file_spec_store.hpp"
#include "nvml/pci_gpus.hpp"

namespace nvdra::drivers {

// Everything start() builds; members in dependency order (destroyed in reverse).
struct GpuBackend::Parts {
  std::shared_ptr<DiscoveredGpus> gpus;  // NodeGpus's session: outlives a restart of this driver
  nvml::DeviceModel model;               // gpus->model plus GPUs NVML saw again after vfio-pci
  claims::GpuInventory inventory;
  // PassthroughSupport: the node's NVIDIA PCI GPUs (gpu-vfio-<index> = position), /dev/iommu, sysfs.
  std::vector<nvml::PciGpu> pci;
  bool iommufd = false;
  std::unique_ptr<claims::PciBinder> binder;
  cdi::HostView host;
  cdi::ContainerEdits common_edits;  // spec-level edits of every claim spec
  std::string hook_problem;          // no nvidia-cdi-hook found: specs go without hooks
  std::unique_ptr<cdi::FileSpecStore> specs;
  std::unique_ptr<claims::FileCheckpointStore> store;
  claims::StartupCheckpoint startup;
  std::unique_ptr<claims::CheckpointCommitter> committer;
  std::unique_ptr<ApiClaimSource> source;
  std::unique_ptr<claims::MpsControl> mps;
  std::string mps_why;  // which MpsControl and why, logged once the driver is up
  std::unique_ptr<claims::FabricPartitions> fabric;  // null: both gates off, FM never touched
  claims::FmOpener fm_retry;  // set when FM is expected but did not answer at start
  std::unique_ptr<claims::GpuClaimHandler> handler;
  std::unique_ptr<DeviceHealthMonitor> health;  // NVMLDeviceHealthCheck only
  // Completed claims the API was not asked about yet (none without an API server): run()'s sweep.
  std::vector<kubelet::ClaimRef> unverified;
};

// PassthroughSupport at start (worker pool): checks the host, reads the PCI GPUs, adds the twins.
Status open_passthrough(GpuBackend::Parts& p, const config::Options& o);
// GPU i's VFIO twin as published.
PublishedDevice published_vfio(const GpuBackend::Parts& p, std::size_t i, bool list_attributes);

}  // namespace nvdra::drivers
