#pragma once
// StatusService — the agent's read-only status on the system bus: name io.nvdra.Agent1, object
// /io/nvdra/Agent1 (interface described in status_codec.hpp). The agent calls update() with a
// fresh StatusSnapshot whenever something changes; the service answers property reads from the
// latest one and emits PropertiesChanged for the properties that differ.
//
// It is a Component: run() drives its BusConnection (or, given a shared connection, just keeps
// the object registered) until cancelled. No bus is not an error: the connection reports it once
// and the agent works on. Access control is the bus policy's job (packaging/debian: root owns the
// name, group "nvdra" reads); every member is read-only. io_context thread only.
#include <functional>
#include <memory>
#include <string>

#include "agent/runtime/component.hpp"
#include "agent/systemd_bus/bus_connection.hpp"
#include "agent/systemd_bus/status_snapshot.hpp"

struct sd_bus_slot;

namespace nvdra::systemd_bus {

class StatusService final : public Component {
 public:
  // Owns a connection to `endpoint` (the system bus unless a test says otherwise).
  explicit StatusService(boost::asio::any_io_executor ex, BusEndpoint endpoint = {});
  // Uses a connection someone else runs (for example one shared with the IMEX unit watcher).
  explicit StatusService(BusConnection& shared);
  ~StatusService() override;

  std::string name() const override { return "status-service"; }
  boost::asio::awaitable<void> run() override;

  // Replaces the snapshot; emits PropertiesChanged for what differs, if connected.
  void update(StatusSnapshot snapshot);
  const StatusSnapshot& snapshot() const { return snapshot_; }
  BusConnection& bus() { return *bus_; }

  // True once the bus has granted the well-known name on the current connection.
  bool owns_name() const { return owns_name_; }
  // Called each time the bus grants the name (after every reconnect too).
  void on_name_owned(std::function<void()> fn) { on_owned_ = std::move(fn); }

 private:
  friend struct StatusCallbacks;  // the sd-bus C callbacks, in the .cpp
  Status on_connect(sd_bus* bus);
  void drop_slots();

  std::unique_ptr<BusConnection> owned_;
  BusConnection* bus_;
  BusConnection::Subscription hook_;
  StatusSnapshot snapshot_;
  sd_bus_slot* object_slot_ = nullptr;
  sd_bus_slot* name_slot_ = nullptr;
  std::function<void()> on_owned_;
  bool owns_name_ = false;
  bool reported_name_failure_ = false;
};

}  // namespace nvdra::systemd_bus
