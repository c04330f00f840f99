#pragma once
// GpuPrepare — the per-claim state the gpu.nvidia.com steps share (claim_step.hpp), and GpuServices,
// the node's parts they act through. The handler (gpu_claim_handler.cpp) fills the plan (groups),
// the steps fill in what they made (MIG ids, VFIO edits, CDI edits, the checkpoint's groups).
// For an undo (rollback or unprepare) the handler fills `undo` instead, from the plan or the entry;
// for start-up (recover, adopt) `recovery` says which walk it is (gpu_recovery.hpp).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/claims/claim/claim_source.hpp"
#include "agent/claims/mig/dynamic_mig.hpp"
#include "agent/claims/fabric/fabric_partitions.hpp"
#include "agent/claims/claim/gpu_inventory.hpp"
#include "agent/claims/sharing/helper_program_mps.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/claims/sharing/share_step.hpp"
#include "agent/claims/sharing/sharing_plan.hpp"
#include "agent/claims/steps/claim_step.hpp"
#include "agent/claims/steps/gpu_edits_cache.hpp"
#include "agent/claims/steps/gpu_recovery.hpp"
#include "agent/claims/sharing/time_slicing.hpp"
#include "agent/claims/vfio/vfio_step.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "cdi/device_edits.hpp"
#include "cdi/spec_builder.hpp"
#include "cdi/spec_store.hpp"

namespace nvdra::runtime {
class WorkerPool;
}

namespace nvdra::claims {

class CheckpointCommitter;

// One config group of a claim, planned (GpuClaimHandler::plan_claim).
struct PlannedGroup {
  std::vector<const InventoryDevice*> devices;
  std::vector<std::size_t> results;  // into ClaimAllocation::results, parallel to devices
  SharingPlan plan;
  std::vector<std::string> uuids;      // all, sorted
  std::vector<std::string> gpu_uuids;  // full GPUs, sorted
  // The physical GPUs for FM (upstream: gpu + vfio results): full GPUs' UUIDs and, for a VFIO
  // device, its GPU's UUID (by its twin; the device name when NVML never saw that GPU).
  std::vector<std::string> fabric_gpus;
  std::optional<FabricTopologyConfig> fabric;  // the group's GpuConfig.fabricTopologyConfig
  std::optional<VfioDeviceConfig> vfio;  // the group's config when it is a VFIO group
};

// A DynamicMIG device to destroy: by its ids when the checkpoint has them, else by its name.
struct MigUndo {
  const InventoryDevice* device = nullptr;
  std::optional<std::pair<unsigned, unsigned>> ids;  // GI, CI
};

// What undoing a group takes, from a plan (PrepareStarted) or the checkpoint (completed).
struct UndoGroup {
  std::vector<std::string> gpu_uuids;  // full GPUs of the group
  std::vector<std::string> uuids;      // all UUIDs (MPS daemon id)
  bool time_sliced = false;
  std::string mps_daemon_id;
  MpsPlan mps;
  std::vector<MigUndo> migs;  // DynamicMIG devices to destroy
  std::vector<const InventoryDevice*> vfio;  // VFIO devices to give back to nvidia
};

// The node's parts the steps act through; every reference outlives the handler.
struct GpuServices {
  runtime::WorkerPool& pool;
  const GpuInventory& inventory;
  CheckpointCommitter& committer;
  cdi::SpecStore& specs;
  MpsControl& mps;
  const NvidiaSmi& smi;
  const ShareStep& shares;
  DynamicMig* dynamic_mig;   // null: no DynamicMIG
  VfioStep* vfio;            // null: no PassthroughSupport
  FabricPartitions* fabric;  // null: FM gates off
  const std::string& node_name;
  const std::string& mps_root;
  const cdi::HostView& host;
  const cdi::SharedEdits& common_edits;  // the driver's, shared by every claim spec
  // A prepared claim's damaged CDI spec was written again (GpuClaimHandlerOptions::on_spec_rewritten).
  const std::function<void(const kubelet::ClaimRef&, const std::string&)>& on_spec_rewritten;
  GpuEditsCache& gpu_edits;  // full GPUs' device edits, kept as upstream keeps them

  MpsDaemon mps_daemon(const std::string& id, std::vector<std::string> uuids, MpsPlan plan) const;
};

struct GpuPrepare {
  const GpuServices& node;
  kubelet::ClaimRef claim;
  std::string_view area;  // the claim's crash-point area (gpu_claim_support.hpp ClaimKind)
  // Prepare: the plan, then what the steps made.
  const ClaimAllocation* allocation = nullptr;
  const std::vector<PlannedGroup>* groups = nullptr;
  FabricPlan fabric;
  std::map<std::string, nvml::MigDeviceInfo> created;  // DynamicMIG devices made here, by name
  std::map<std::string, nvml::MigDeviceInfo> shared;   // DynamicMIG devices live for another share
  std::map<std::string, cdi::ContainerEdits> vfio_edits;  // VFIO devices, by name, once bound
  std::vector<std::optional<MpsDaemon>> daemons;        // per group
  std::vector<cdi::NamedEdits> edits;                   // per device, in group order
  cdi::SharedEdits claim_edits;                         // the spec-level edits (shared: copy to change)
  std::vector<PreparedGroup> prepared;                  // the PrepareCompleted entry's groups
  // Undo (rollback or unprepare): what to undo per group.
  std::vector<UndoGroup> undo;
  // Start-up: which walk of the step list this is (null: a prepare or an undo).
  const GpuRecovery* recovery = nullptr;
};

using GpuStep = steps::ClaimStep<GpuPrepare>;

// Whether a group of the plan shares its devices this way. The steps of one sharing kind return
// at once for claims without it: a trip to the worker pool and back is two thread switches, most
// of what such a step would cost a claim that has nothing for it to do.
inline bool plans_sharing(const GpuPrepare& c, SharingKind kind) {
  for (const auto& group : *c.groups)
    if (group.plan.kind == kind) return true;
  return false;
}

// Whether a group of the plan hands its devices to vfio-pci (a VfioDeviceConfig group).
inline bool plans_vfio(const GpuPrepare& c) {
  for (const auto& group : *c.groups)
    if (group.vfio) return true;
  return false;
}

// The same for an undo: whether a group had an MPS daemon (the compute-mode and MPS steps' undos).
inline bool undoes_mps_daemon(const GpuPrepare& c) {
  for (const auto& g : c.undo)
    if (!g.mps_daemon_id.empty()) return true;
  return false;
}

}  // namespace nvdra::claims
