#pragma once
// ImexUnitWatcher — follows the host's IMEX unit (--imex-unit, default nvidia-imex.service) through
// org.freedesktop.systemd1 on the shared system-bus connection: GetUnit (LoadUnit when systemd has
// not loaded it), then LoadState/ActiveState/SubState, then the unit's PropertiesChanged signals
// (Manager.Subscribe asks systemd to send them). No polling: the state is re-read only when the
// connection comes back, when systemd (re)appears on the bus (NameOwnerChanged) or when a signal
// invalidates a property. It never starts, stops or restarts the unit.
//
// Each change of the view goes to the listeners and is logged once; a bus without systemd (a
// container without the host's bus) is reported once, not per reconnect. Thread: io_context only.
// Lifetime: the connection must outlive the watcher; reads in flight at destruction finish
// harmlessly (they hold the shared state, and the destructor detaches it from the bus).
#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "imex/unit_policy.hpp"

namespace nvdra::systemd_bus { class BusConnection; }

namespace nvdra::drivers {

class ImexUnitWatcher {
 public:
  using Listener = std::function<void(const imex::UnitView&)>;

  ImexUnitWatcher(systemd_bus::BusConnection& bus, std::string unit);
  ~ImexUnitWatcher();
  ImexUnitWatcher(const ImexUnitWatcher&) = delete;
  ImexUnitWatcher& operator=(const ImexUnitWatcher&) = delete;

  // Subscribes (kept across reconnects by the connection) and reads the state once connected;
  // reads run as coroutines on `executor` (the connection's io_context).
  void start(boost::asio::any_io_executor executor);
  const imex::UnitView& view() const;
  void on_change(Listener listener);
  // Completed state reads (GetUnit … SubState), for tests.
  uint64_t reads() const;

  // systemd's object path of a unit: /org/freedesktop/systemd1/unit/<bus-label-escaped name>.
  static std::string unit_path(const std::string& unit);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace nvdra::drivers
