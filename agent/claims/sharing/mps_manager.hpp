#pragma once
// Which MpsControl runs a claim's MPS control daemon (--mps-manager). On a systemd host the daemon
// is a transient unit (SystemdMpsControl): it outlives agent restarts and is visible to the
// operator. In a container the agent's systemd, if any, is not the host's and the host's bus may
// not be reachable, so the daemon is a child process (ProcessMpsControl) as in upstream's pod.
#include <memory>
#include <string>

#include "agent/claims/sharing/helper_program_mps.hpp"

namespace nvdra::claims {

enum class MpsManagerKind { kSystemd, kProcess };
const char* to_string(MpsManagerKind kind);

// What `auto` looks at.
struct HostFacts {
  bool systemd_booted = false;  // sd_booted() > 0: systemd is PID 1 of this (mount) namespace
  std::string container;        // what says the agent runs in a container; "" when nothing does
};

// sd_booted(), the `container` environment variable, /.dockerenv and /run/.containerenv. Blocking
// (stat): call it on the WorkerPool.
HostFacts probe_host();

struct MpsManagerChoice {
  MpsManagerKind kind = MpsManagerKind::kProcess;
  std::string why;  // for the start-up log line
};

// `auto`: systemd when the host runs systemd and the agent is not in a container, else process.
MpsManagerChoice auto_mps_manager(const HostFacts& host);

std::unique_ptr<MpsControl> make_mps_control(MpsManagerKind kind, std::string driver_root);

}  // namespace nvdra::claims
