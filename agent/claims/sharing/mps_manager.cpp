#include "agent/claims/sharing/mps_manager.hpp"

#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <filesystem>

#include "agent/claims/sharing/mps_systemd_unit.hpp"

namespace nvdra::claims {

const char* to_string(MpsManagerKind kind) { return kind == MpsManagerKind::kSystemd ? "systemd" : "process"; }

HostFacts probe_host() {
  HostFacts facts;
  facts.systemd_booted = sd_booted() > 0;
  // systemd-nspawn, podman and LXC set $container; Docker leaves /.dockerenv, podman and CRI-O
  // /run/.containerenv; kubelet gives every pod KUBERNETES_SERVICE_HOST (containerd leaves no mark).
  if (const char* c = std::getenv("container"); c && *c) {
    facts.container = std::string("container=") + c;
  } else if (const char* k = std::getenv("KUBERNETES_SERVICE_HOST"); k && *k) {
    facts.container = "a Kubernetes pod (KUBERNETES_SERVICE_HOST is set)";
  } else {
    std::error_code ec;
    for (const char* marker : {"/.dockerenv", "/run/.containerenv"})
      if (std::filesystem::exists(marker, ec)) {
        facts.container = std::string(marker) + " exists";
        break;
      }
  }
  return facts;
}

MpsManagerChoice auto_mps_manager(const HostFacts& host) {
  if (!host.container.empty())
    return {MpsManagerKind::kProcess, "auto: in a container (" + host.container + ")"};
  if (!host.systemd_booted) return {MpsManagerKind::kProcess, "auto: the host does not run systemd"};
  return {MpsManagerKind::kSystemd, "auto: the host runs systemd and the agent is not in a container"};
}

std::unique_ptr<MpsControl> make_mps_control(MpsManagerKind kind, std::string driver_root) {
  if (kind == MpsManagerKind::kSystemd) return std::make_unique<SystemdMpsControl>(std::move(driver_root));
  return std::make_unique<ProcessMpsControl>(std::move(driver_root));
}

}  // namespace nvdra::claims
