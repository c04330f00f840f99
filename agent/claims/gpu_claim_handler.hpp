#pragma once
// GpuClaimHandler — prepare/unprepare of gpu.nvidia.com claims (full GPUs, MIG devices, and with
// PassthroughSupport VFIO devices, whose binding is VfioStep's)
// behind kubelet::ClaimHandler (see its contract). Flow per claim (DEVELOPERS.md "Adding a step"):
// checkpoint fast path → claim lookup (ClaimSource) → config resolution (plan_claim) → checks against
// other claims → the steps of steps/gpu_step_list.cpp through steps::run_pipeline: every step's plan,
// PrepareStarted (durable, before any side effect), every step's apply in order, PrepareCompleted →
// answer. Unprepare walks the steps' undo in upstream's order, then erases the entry. Every step is
// idempotent, so a rerun after a crash converges; a PrepareStarted entry is rolled back (at the next
// prepare/unprepare of the claim, or by recover() at start-up).
//
// Thread: call on the io_context thread that runs the committer; blocking work (exec, CDI writes,
// sysfs reads) goes to the WorkerPool. Lifetime: every reference must outlive the handler.
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/gpu_edits_cache.hpp"
#include "agent/claims/claim/claim_source.hpp"
#include "agent/claims/mig/dynamic_mig.hpp"
#include "agent/claims/fabric/fabric_partitions.hpp"
#include "agent/claims/claim/gpu_inventory.hpp"
#include "agent/claims/sharing/helper_program_mps.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/claims/claim/rollback_report.hpp"
#include "agent/claims/sharing/sharing_plan.hpp"
#include "agent/claims/sharing/share_step.hpp"
#include "agent/claims/sharing/time_slicing.hpp"
#include "agent/claims/steps/gpu_prepare.hpp"
#include "agent/claims/steps/step_pipeline.hpp"
#include "agent/claims/vfio/vfio_step.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "cdi/device_edits.hpp"
#include "cdi/spec_store.hpp"

namespace nvdra::runtime {
class WorkerPool;
}

namespace nvdra {
class StepClock;
}

namespace nvdra::claims {

struct GpuClaimHandlerOptions {
  std::string node_name;          // the pool name in answers (NVIDIA convention)
  std::string driver_root = "/";  // where nvidia-smi is found, as the agent sees it
  std::string mps_root;           // <plugins dir>/gpu.nvidia.com/mps: one <daemon id>/ per MPS group
  cdi::HostView host;             // how CDI device edits read the host
  // Spec-level edits of every claim spec: the driver's common edits and NVIDIA_VISIBLE_DEVICES=void
  // (upstream-driver.md §5.1), so each claim-scoped CDI id alone is all a container needs.
  cdi::ContainerEdits common_edits;
  ConfigGates gates;              // copied from config::FeatureGates
  // DynamicMIG: the NVML seam that creates/destroys MIG devices at prepare/unprepare (the
  // agent's long-lived library; must outlive the handler). Null: dynamic MIG devices in the
  // inventory (GpuInventory(model, true)) cannot be prepared and recover() leaves MIG alone.
  nvml::GpuLibrary* mig_library = nullptr;
  metrics::Sink* metrics = nullptr;  // where DynamicMIG counts MIG devices; null: nowhere
  bool consumable_shares = false;    // --consumable-shares ≠ disabled (share_step.hpp)
  // FabricManager partitions (FabricManagerPartitioning / FabricTopologySupport); null: gates off,
  // FM is never touched. Must outlive the handler.
  FabricPartitions* fabric = nullptr;
  // PassthroughSupport: the sysfs seam VFIO devices are bound through (null: VFIO devices in the
  // inventory cannot be prepared) and the step's settings.
  PciBinder* pci = nullptr;
  VfioStepOptions vfio;
  // After a claim with a VFIO device or a twinned GPU was prepared or undone: the published
  // devices change (one face of a GPU is withdrawn while the other is prepared).
  std::function<void()> on_devices_changed;
  // A prepared claim's CDI spec was missing or not valid JSON and was rewritten from its checkpoint
  // entry (repeated prepare or start-up); `note` says which file and what was wrong. The handler
  // logs it too; the agent also records a Warning Event.
  std::function<void(const kubelet::ClaimRef&, const std::string& note)> on_spec_rewritten;
  // A failed prepare's rollback failed too (logged by the handler): the agent records a Warning
  // Event on the claim and counts it.
  RollbackFailed on_rollback_failed;
};

// Whether a checkpointed claim still exists in the API (same namespace, name and UID).
using ClaimExists = std::function<boost::asio::awaitable<Result<bool>>(kubelet::ClaimRef)>;
// ClaimSource::get as a ClaimExists answer: kNotFound or another UID → false.
boost::asio::awaitable<Result<bool>> claim_exists(ClaimSource& source, kubelet::ClaimRef claim);

class GpuClaimHandler final : public kubelet::ClaimHandler {
 public:
  GpuClaimHandler(runtime::WorkerPool& pool, ClaimSource& source, const GpuInventory& inventory,
                  CheckpointCommitter& committer, cdi::SpecStore& specs, MpsControl& mps,
                  GpuClaimHandlerOptions options);

  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;

  // Start-up, before serving kubelet: rolls back PrepareStarted claims, repairs what the completed
  // ones hold, and removes claim spec files of this driver's vendor that no checkpoint entry owns.
  // It reads nothing from the API: completed claims deleted while the agent was down are unprepared
  // once it serves (drivers/gone_claim_sweep.hpp), so a start with many claims is not one GET each.
  boost::asio::awaitable<RecoveryReport> recover();

  // Start-up after a corrupt checkpoint was moved aside, before recover(): records `claim`, whose
  // CDI spec is on the node and whose allocation the API has, as PrepareCompleted with what its
  // prepare made (devices, CDI ids, time slice, MPS daemon id, DynamicMIG ids read from NVML),
  // without redoing any of it, so its containers keep running and its unprepare undoes it all.
  boost::asio::awaitable<Status> adopt(kubelet::ClaimRef claim);

  // recover() calls it; again when FM is reached after start: every checkpointed claim whose
  // recorded status plans goes through the steps' recover (kHold), so it holds its FM partitions
  // again (gpu_claim_fabric.cpp).
  boost::asio::awaitable<void> adopt_fabric(RecoveryReport& report);

 private:
  Result<std::vector<PlannedGroup>> plan_claim(ClaimAllocation& allocation, const kubelet::ClaimRef& claim) const;
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare_new(kubelet::ClaimRef claim);
  // Undoes side effects, removes the CDI spec and the checkpoint entry.
  boost::asio::awaitable<Status> undo_claim(kubelet::ClaimRef claim, std::vector<UndoGroup> groups);
  Result<std::vector<UndoGroup>> undo_groups(const std::string& uid, const CheckpointedClaim& entry) const;
  // The checks against other claims, with no suspension before the PrepareStarted commit.
  Status check_free(const kubelet::ClaimRef& claim, const ClaimAllocation& allocation) const;
  std::string_view area_of(const std::vector<PlannedGroup>& groups) const;
  std::string_view area_of(const std::vector<UndoGroup>& groups) const;
  // The pipeline's hooks for one prepare: the checkpoint commits and the rollback.
  steps::PipelineHooks<GpuPrepare> prepare_hooks(const kubelet::ClaimRef& claim, CheckpointedClaim& entry,
                                                 StepClock& clock);
  // What undoing a planned group takes (gpu_claim_undo.cpp); a DynamicMIG device by its ids when
  // this prepare created it, and not at all while another completed claim uses it.
  UndoGroup undo_of(const PlannedGroup& group, const std::string& uid,
                    const std::map<std::string, nvml::MigDeviceInfo>& created) const;
  bool mig_used_elsewhere(const std::string& device, const std::string& uid) const;
  // Start-up (prepared_claim_recovery.cpp): PrepareStarted claims rolled back, unreadable completed
  // ones reported; then every completed claim through the steps' recover (kRepair).
  boost::asio::awaitable<void> undo_unfinished(RecoveryReport& report);
  boost::asio::awaitable<void> repair_completed(const MissingMigs* missing_migs, RecoveryReport& report);

  runtime::WorkerPool& pool_;
  ClaimSource& source_;
  const GpuInventory& inventory_;
  CheckpointCommitter& committer_;
  cdi::SpecStore& specs_;
  MpsControl& mps_;
  GpuClaimHandlerOptions options_;
  NvidiaSmi smi_;
  std::unique_ptr<DynamicMig> dynamic_mig_;  // set when options.mig_library is
  ShareStep shares_;
  std::unique_ptr<VfioStep> vfio_;           // set when options.pci is
  GpuEditsCache gpu_edits_;                  // full GPUs' device edits, kept 5 minutes
  cdi::SharedEdits common_edits_;            // options_.common_edits, shared by every claim spec
  std::unique_ptr<GpuServices> services_;    // what the steps act through (steps/gpu_prepare.hpp)
};

}  // namespace nvdra::claims
