#pragma once
// The gpu.nvidia.com prepare as its list of steps (claim_step.hpp): each step in its own file here,
// one line for it in gpu_step_list.cpp. Internal to agent/claims.
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

// The claim's FM partitions (fabric_partition_step.cpp); empty when FM is off.
Result<FabricPlan> fabric_plan(const GpuServices& node, const std::string& uid, const std::vector<PlannedGroup>& groups);

}  // namespace nvdra::claims
