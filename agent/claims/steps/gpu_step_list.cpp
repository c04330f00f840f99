// The gpu.nvidia.com steps, in the order a prepare applies them and an unprepare undoes them.
#include "agent/claims/steps/gpu_step_list.hpp"

#include <algorithm>

namespace nvdra::claims {

const steps::StepList<GpuPrepare>& gpu_prepare_steps() {
  static const steps::StepList<GpuPrepare> steps{
      &fabric_partition_step(),
      &dynamic_mig_step(),
      &vfio_hand_over_step(),
      &time_slice_step(),
      &compute_mode_step(),
      &mps_daemon_step(),
      &device_edits_step(),
      &device_metadata_step(),
      &claim_spec_step(),
  };
  return steps;
}

const steps::StepList<GpuPrepare>& gpu_undo_steps() {
  static const steps::StepList<GpuPrepare> steps{
      &dynamic_mig_step(),      // a busy MIG device fails the unprepare before anything else is undone
      &vfio_hand_over_step(),
      &mps_daemon_step(),
      &compute_mode_step(),     // DEFAULT only once the daemon is gone
      &time_slice_step(),
      &device_metadata_step(),
      &device_edits_step(),
      &claim_spec_step(),
      &fabric_partition_step(), // upstream: FM deactivate after sharing is undone, before the entry goes
  };
  return steps;
}

MpsDaemon GpuServices::mps_daemon(const std::string& id, std::vector<std::string> uuids, MpsPlan plan) const {
  std::sort(uuids.begin(), uuids.end());
  return MpsDaemon{id, mps_root + "/" + id, std::move(uuids), std::move(plan)};
}

}  // namespace nvdra::claims
