#pragma once
// AgentStatus — the agent's own view of itself, kept current by its components and handed, as a
// systemd_bus::StatusSnapshot, to whoever listens (the D-Bus StatusService). Components replace
// their part (one driver's registration, its devices, its claims, the IMEX unit) and record
// errors; listeners hear of each change. Thread: io_context only, no locking.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::status {

class AgentStatus {
 public:
  using Listener = std::function<void(const systemd_bus::StatusSnapshot&)>;

  AgentStatus(std::string version, std::string node_name);

  void set_ready(bool ready);
  // Replaces the entry with the same name, or adds it.
  void set_driver(systemd_bus::DriverStatus driver);
  // Replaces every device / claim of `driver` (every row of `claims` is one of `driver`'s).
  void set_devices(const std::string& driver, std::vector<systemd_bus::DeviceStatus> devices);
  void set_claims(const std::string& driver, const systemd_bus::ClaimRows& claims);
  void set_imex(systemd_bus::ImexStatus imex);
  void set_fabric(systemd_bus::FabricStatus fabric);
  // Keeps the newest StatusSnapshot::kMaxErrors.
  void record_error(std::string component, std::string message);

  const systemd_bus::StatusSnapshot& snapshot() const { return snapshot_; }
  // Called after every change that altered the snapshot (not for no-op updates).
  void on_change(Listener listener) { listeners_.push_back(std::move(listener)); }

 private:
  void changed();
  systemd_bus::StatusSnapshot snapshot_;
  std::vector<Listener> listeners_;
};

}  // namespace nvdra::status
