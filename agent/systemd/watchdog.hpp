#pragma once
// Watchdog — pings systemd's watchdog from a timer on the io_context itself, at half the interval
// systemd asked for. If the loop stalls, the pings stop and systemd restarts the agent, which is
// the point. A no-op task when the watchdog is off.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace nvdra::systemd {

class Notifier;

class Watchdog {
 public:
  explicit Watchdog(Notifier& notifier) : notifier_(notifier) {}
  boost::asio::awaitable<void> run();  // ends on cancellation

 private:
  Notifier& notifier_;
};

}  // namespace nvdra::systemd
