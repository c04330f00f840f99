#pragma once
// Notifier — the systemd service-manager seam (sd_notify). The real implementation is silent when
// NOTIFY_SOCKET is unset; the test one records what was sent. Calls are cheap and non-blocking
// (one datagram), so they are made directly from the io_context thread.
#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

namespace nvdra::systemd {

class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual void ready() = 0;
  virtual void status(std::string_view text) = 0;
  virtual void stopping() = 0;
  virtual void watchdog() = 0;
  // The interval systemd expects pings within (WATCHDOG_USEC for this PID), if the watchdog is on.
  virtual std::optional<std::chrono::microseconds> watchdog_interval() const = 0;
};

std::unique_ptr<Notifier> make_sd_notifier();

}  // namespace nvdra::systemd
