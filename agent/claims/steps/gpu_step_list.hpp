#pragma once
// The gpu.nvidia.com prepare as its list of steps (claim_step.hpp): each step in its own file here,
// one line for it in gpu_step_list.cpp. Internal to agent/claims.
#include <set>
#include <string>
#include <vector>

#include "agent/claims/steps/gpu_prepare.hpp"

namespace nvdra::claims {

// In apply order: FM partition, DynamicMIG device, VFIO hand-over, time slice, compute mode, MPS
// daemon, CDI device edits, device metadata files, claim CDI spec.
const steps::StepList<GpuPrepare>& gpu_prepare_steps();
// In undo order, upstream's unprepare order (MIG devices first, FM last), which is not the reverse
// of the apply order: crash_points.txt names what is undone at each point of an unprepare.
const steps::StepList<GpuPrepare>& gpu_undo_steps();

// The steps (one file each).
GpuStep& fabric_partition_step();
GpuStep& dynamic_mig_step();
GpuStep& vfio_hand_over_step();
GpuStep& time_slice_step();
GpuStep& compute_mode_step();
GpuStep& mps_daemon_step();
GpuStep& device_edits_step();
GpuStep& device_metadata_step();
GpuStep& claim_spec_step();

// DynamicMIG at start-up (dynamic_mig_recovery.cpp), upstream-driver.md §6.4. Around the kRepair walk
// (gpu_recovery.hpp), node-wide: before it, MIG devices no completed claim owns are destroyed (their
// placements freed) and those gone are returned per claim; after it, MIG mode goes off on GPUs left
// without any. The step's recover: recreate_missing_migs (kRepair) and adopted_migs (kAdopt).
boost::asio::awaitable<MissingMigs> destroy_orphan_migs(const GpuServices& node, RecoveryReport& report);
boost::asio::awaitable<void> disable_unused_migs(const GpuServices& node, const RecoveryReport& report);
boost::asio::awaitable<Status> recreate_missing_migs(GpuPrepare& c);
boost::asio::awaitable<Status> adopted_migs(GpuPrepare& c);

// A prepared claim's CDI spec damaged on disk after its prepare (missing, or not a JSON object) is
// written again from its entry (claim_spec_repair.cpp), at its next prepare and by the claim spec
// step's recover (kRepair). Rewritten: true, logged and told to node.on_spec_rewritten; an error
// when it cannot be (VFIO devices, whose edits come from the bound device).
boost::asio::awaitable<Result<bool>> ensure_claim_spec(const GpuServices& node, const kubelet::ClaimRef& claim,
                                                       const CheckpointedClaim& entry);
// The UIDs of those `claims` whose claim spec on disk is whole: start-up's kRepair walk reads them all in
// one pool job, then checks (and rewrites) through ensure_claim_spec only the others. Blocking (file reads).
std::set<std::string> intact_claim_specs(const GpuServices& node,
                                         const std::vector<kubelet::ClaimRef>& claims);

// The claim's FM partitions (fabric_partition_step.cpp); empty when FM is off.
Result<FabricPlan> fabric_plan(const GpuServices& node, const std::string& uid, const std::vector<PlannedGroup>& groups);

}  // namespace nvdra::claims
