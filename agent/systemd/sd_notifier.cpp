// The real Notifier, over libsystemd's sd_notify(3).
#include <systemd/sd-daemon.h>

#include <cstring>
#include <string>

#include "agent/base/log.hpp"
#include "agent/systemd/notifier.hpp"

namespace nvdra::systemd {
namespace {

class SdNotifier final : public Notifier {
 public:
  void ready() override { send("READY=1\nSTATUS=ready"); }
  void status(std::string_view text) override { send("STATUS=" + std::string(text)); }
  void stopping() override { send("STOPPING=1\nSTATUS=stopping"); }
  void watchdog() override { send("WATCHDOG=1"); }
  std::optional<std::chrono::microseconds> watchdog_interval() const override {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) return std::chrono::microseconds(usec);
    return std::nullopt;
  }

 private:
  void send(const std::string& msg) {
    // A failure here must not stop the agent: the service manager is a consumer, not a dependency.
    if (int r = sd_notify(0, msg.c_str()); r < 0 && !warned_) {
      warned_ = true;
      nvdra::logger("systemd")->warn("sd_notify failed: {}, ignoring", std::strerror(-r));
    }
  }
  bool warned_ = false;
};

}  // namespace

std::unique_ptr<Notifier> make_sd_notifier() { return std::make_unique<SdNotifier>(); }

}  // namespace nvdra::systemd
