#pragma once
// Fetches the agent's status over D-Bus (Properties.GetAll on io.nvdra.Agent1), synchronously:
// nvdractl is a one-shot tool. Failures are classified so the tool can say what to do:
//   kUnavailable      no bus, or the agent is not running (nobody owns io.nvdra.Agent1)
//   kPermissionDenied the bus policy refused us (not root, not in the agent's group)
//   other             a broken reply, named with the property at fault
#include <string>

#include "agent/base/result.hpp"
#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::ctl {

struct ClientOptions {
  std::string address;  // explicit bus address; empty means the system bus (DBUS_SYSTEM_BUS_ADDRESS honoured)
  int timeout_ms = 10000;
};

Result<systemd_bus::StatusSnapshot> fetch_status(const ClientOptions& options);

}  // namespace nvdra::ctl
