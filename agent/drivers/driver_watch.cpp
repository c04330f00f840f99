#include "agent/drivers/driver_watch.hpp"

#include <sys/inotify.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <filesystem>

#include "agent/config/options.hpp"

namespace nvdra::drivers {

namespace asio = boost::asio;

DriverWatch::DriverWatch(asio::any_io_executor ex, const std::vector<std::string>& dirs)
    : inotify_(ex), timer_(ex) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return;  // no inotify: the fallback period alone
  inotify_.assign(fd);
  for (const auto& d : dirs)
    if (::inotify_add_watch(fd, d.c_str(), IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_CLOSE_WRITE) >= 0) ++watched_;
}

asio::awaitable<void> DriverWatch::next(std::chrono::milliseconds fallback) {
  using namespace asio::experimental::awaitable_operators;
  timer_.expires_after(fallback);
  auto changed = [this]() -> asio::awaitable<void> {
    if (!inotify_.is_open()) {
      asio::steady_timer never(inotify_.get_executor(), asio::steady_timer::time_point::max());
      (void)co_await never.async_wait(asio::as_tuple(asio::use_awaitable));
      co_return;
    }
    // What changed does not matter: the caller tries the driver again. Drain what is queued.
    std::array<char, 4096> buf;
    (void)co_await inotify_.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
  };
  (void)co_await (changed() || timer_.async_wait(asio::as_tuple(asio::use_awaitable)));
}

std::vector<std::string> driver_watch_dirs(const config::Options& o) {
  namespace fs = std::filesystem;
  const fs::path host(o.host_root), driver(o.nvidia_driver_root);
  // The driver root's parent too: a driver container's root (/run/nvidia/driver) may not exist yet.
  std::vector<std::string> out{(host / "dev").string(), (driver / "dev").string(), driver.string(),
                               driver.parent_path().string()};
  for (const char* lib : {"usr/lib64", "usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "lib64"})
    out.push_back((driver / lib).string());
  // An explicit --nvml-library: its directory too (the file may be put there later).
  if (!o.nvml_library.empty()) out.push_back(fs::path(o.nvml_library).parent_path().string());
  return out;
}

}  // namespace nvdra::drivers
