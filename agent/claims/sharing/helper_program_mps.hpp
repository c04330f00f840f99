#pragma once
// MpsControl — the seam that starts and stops one MPS control daemon per claim device group
// (../shared/reference/upstream-driver.md §4.2; issue "GPU claims" §4). Two real implementations,
// picked by --mps-manager: ProcessMpsControl (here) runs `nvidia-cuda-mps-control -d` from the
// driver root as a child of the agent — for a container, where there is no systemd to ask — and
// SystemdMpsControl (mps_systemd_unit.hpp) runs it as a transient systemd unit on a systemd host.
// Both set the limits through the control program with the shared helpers below. Test: a fake
// that records calls.
//
// Contract: blocking (exec, mkdir, D-Bus calls) — call on the WorkerPool. start() of a running
// daemon and stop() of a missing one succeed (idempotent), so a rerun after a crash converges.
// Errors carry the helper's stderr, or name the systemd unit and the D-Bus error; the caller names
// the claim.
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/sharing/sharing_plan.hpp"

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

// Shared by both implementations, so the daemon is laid out, started and limited the same way.
// The control program under the driver root (/, /opt/bin, /usr/bin, /usr/sbin, /bin, /sbin).
Result<std::string> locate_mps_control(const std::string& driver_root);
// CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY and CUDA_VISIBLE_DEVICES (the group's UUIDs).
std::vector<std::string> mps_daemon_env(const MpsDaemon& daemon);
// The daemon's flags after the program: `-d`, and `-M` for multi-user.
std::vector<std::string> mps_daemon_flags(const MpsDaemon& daemon);
// Creates pipe/, shm/ and log/ below root_dir.
Status create_mps_dirs(const MpsDaemon& daemon);
// Removes root_dir and everything below it (nothing there is fine).
Status remove_mps_dirs(const MpsDaemon& daemon);
// set_default_active_thread_percentage and set_default_device_pinned_mem_limit per UUID over the
// control pipe of a running daemon; nothing to send is success. Errors carry the program's stderr.
Status apply_mps_limits(const std::string& control, const MpsDaemon& daemon);

class MpsControl {
 public:
  virtual ~MpsControl() = default;
  virtual Status start(const MpsDaemon& daemon) = 0;
  virtual Status stop(const MpsDaemon& daemon) = 0;
  // "process" or "systemd": names the crash points of MPS claims ("mps-<kind>.<step>").
  virtual const char* kind() const = 0;
};

class ProcessMpsControl final : public MpsControl {
 public:
  explicit ProcessMpsControl(std::string driver_root) : driver_root_(std::move(driver_root)) {}
  // Creates the directories, runs `-d` with mps_daemon_env(), then apply_mps_limits(). The daemon
  // detaches itself and is found again after an agent restart through its pipe directory.
  Status start(const MpsDaemon& daemon) override;
  // `quit` over the control pipe (when the pipe directory exists), then removes root_dir.
  Status stop(const MpsDaemon& daemon) override;
  const char* kind() const override { return "process"; }

 private:
  std::string driver_root_;
};

}  // namespace nvdra::claims
