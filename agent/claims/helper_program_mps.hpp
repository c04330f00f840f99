#pragma once
// MpsControl — the seam that starts and stops one MPS control daemon per claim device group
// (../shared/reference/upstream-driver.md §4.2; issue "GPU claims" §4). Real: ProcessMpsControl runs
// `nvidia-cuda-mps-control -d` from the driver root as a child of the agent with the group's pipe
// and log directories, then sets the limits through the control program. Test: a fake that records
// calls. A systemd-unit implementation can sit behind the same seam.
//
// Contract: blocking (exec, mkdir) — call on the WorkerPool. start() of a running daemon and stop()
// of a missing one succeed (idempotent), so a rerun after a crash converges. Errors carry the
// helper's stderr; the caller names the claim.
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/sharing_plan.hpp"

namespace nvdra::claims {

struct MpsDaemon {
  std::string id;        // <claimUID>-<5 hex of sha256(sorted UUIDs joined by ",")>
  std::string root_dir;  // <mps root>/<id>: pipe/, shm/, log/ below it
  std::vector<std::string> uuids;  // GPU and MIG UUIDs of the group, sorted (CUDA_VISIBLE_DEVICES)
  MpsPlan plan;
  std::string pipe_dir() const { return root_dir + "/pipe"; }
  std::string shm_dir() const { return root_dir + "/shm"; }
  std::string log_dir() const { return root_dir + "/log"; }
};

// Upstream's daemon id for a claim's device group.
std::string mps_daemon_id(const std::string& claim_uid, std::vector<std::string> uuids);

class MpsControl {
 public:
  virtual ~MpsControl() = default;
  virtual Status start(const MpsDaemon& daemon) = 0;
  virtual Status stop(const MpsDaemon& daemon) = 0;
};

class ProcessMpsControl final : public MpsControl {
 public:
  explicit ProcessMpsControl(std::string driver_root) : driver_root_(std::move(driver_root)) {}
  // Creates pipe/, shm/, log/; `-d` (`-d -M` for multi-user) with CUDA_MPS_PIPE_DIRECTORY,
  // CUDA_MPS_LOG_DIRECTORY and CUDA_VISIBLE_DEVICES; then set_default_active_thread_percentage and
  // set_default_device_pinned_mem_limit per UUID over the control pipe. The daemon detaches itself
  // and is found again after an agent restart through its pipe directory.
  Status start(const MpsDaemon& daemon) override;
  // `quit` over the control pipe (when the pipe directory exists), then removes root_dir.
  Status stop(const MpsDaemon& daemon) override;

 private:
  Result<std::string> locate() const;
  std::string driver_root_;
};

}  // namespace nvdra::claims
