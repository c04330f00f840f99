#pragma once
// A StatusSnapshot with something in every field, shared by the status tests and the fixture
// process the CLI tests talk to.
#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::test {

inline systemd_bus::StatusSnapshot sample_snapshot() {
  systemd_bus::StatusSnapshot s;
  s.version = "0.1.0";
  s.node_name = "gpu-node-a";
  s.ready = true;
  s.drivers = {{"gpu.nvidia.com", systemd_bus::kRegistrationRegistered, true, ""},
               {"compute-domain.nvidia.com", systemd_bus::kRegistrationPending, false, "waiting for kubelet"}};
  s.devices = {{"gpu.nvidia.com", "gpu-0", "gpu", "GPU-4c3a5b8e-1f0d-4b2e-9a61-000000000000", "healthy"},
               {"gpu.nvidia.com", "gpu-1-mig-1g10gb-19-0", "mig", "MIG-77aa5b8e-1f0d-4b2e-9a61-000000000001",
                "unhealthy"},
               {"compute-domain.nvidia.com", "channel-0", "channel", "", "unknown"}};
  s.claims = {{"0b6e1c2a-0000-4000-8000-000000000001", "team-a", "train-gpu", "gpu.nvidia.com", "PrepareCompleted",
               {"gpu-0"}},
              {"0b6e1c2a-0000-4000-8000-000000000002", "team-b", "imex-channel", "compute-domain.nvidia.com",
               "PrepareStarted", {"channel-0"}}};
  s.imex = {"hostManaged", "nvidia-imex.service", "active", "running"};
  s.fabric = {"unix:/run/nvidia-fabricmanager/socket", {{3, {"5", "6", "7", "8"}, {"0b6e1c2a-0000-4000-8000-000000000001"}}}};
  s.last_errors = {{1795000000000000ULL, "kubelet", "registration socket vanished, re-registering"}};
  return s;
}

}  // namespace nvdra::test
