#pragma once
// SystemdMpsControl — the MpsControl for a systemd host: each MPS control daemon runs as the
// transient unit nvdra-mps-<daemon id>.service, started through org.freedesktop.systemd1 on the
// system bus (DBUS_SYSTEM_BUS_ADDRESS when set).
//
// Why a unit and not a child of the agent: a child lives in nvdra-agent.service's cgroup, so
// stopping or restarting the agent kills every claim's daemon; a unit of its own outlives the
// agent, is found again by name after a restart, shows up in `systemctl status` and
// `journalctl -u`, and StopUnit takes down all it spawned (the MPS servers too), as deleting
// upstream's Deployment does.
//
// Contract: as MpsControl — blocking (sd-bus calls, waiting for the unit's job), call it on the
// WorkerPool. Each call opens its own system-bus connection: calls for different claims run
// concurrently and an sd_bus must not be shared between threads, and a restarted bus needs no
// reconnect logic. Errors name the unit, and for D-Bus failures the error's name and message.
#include <chrono>
#include <string>

#include "agent/claims/sharing/helper_program_mps.hpp"

namespace nvdra::claims {

class SystemdMpsControl final : public MpsControl {
 public:
  // job_timeout bounds each wait for a start or stop job (and each D-Bus call).
  explicit SystemdMpsControl(std::string driver_root,
                             std::chrono::milliseconds job_timeout = std::chrono::seconds(30))
      : driver_root_(std::move(driver_root)), job_timeout_(job_timeout) {}

  // "nvdra-mps-<daemon id>.service".
  static std::string unit_name(const MpsDaemon& daemon);

  // Creates the directories; an active unit is the daemon already running (a repeated prepare, or
  // an agent restart) and is left alone. Otherwise StartTransientUnit (Type=forking, ExecStart
  // `nvidia-cuda-mps-control -d [-M]`, mps_daemon_env()), waits for the start job, and sets the
  // limits over the control pipe (apply_mps_limits).
  Status start(const MpsDaemon& daemon) override;
  // StopUnit and waits for the job (a unit systemd does not know is already stopped), then
  // removes root_dir.
  Status stop(const MpsDaemon& daemon) override;
  const char* kind() const override { return "systemd"; }

 private:
  std::string driver_root_;
  std::chrono::milliseconds job_timeout_;
};

}  // namespace nvdra::claims
