#pragma once
// DriverWatch — wakes its owner when the NVIDIA driver may have appeared on the node: inotify on the
// directories where an installation shows (device nodes under <host root>/dev and <driver root>/dev,
// the driver root and its library directories), so a driver installed after the agent (the GPU
// Operator's driver container) is found at once, not at a retry's backoff. A directory that does not
// exist yet is not watched: the fallback period covers it. io_context thread; the inotify descriptor
// is read asynchronously (never a blocking call), and next() is cancellable.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace nvdra::config { struct Options; }

namespace nvdra::drivers {

class DriverWatch {
 public:
  DriverWatch(boost::asio::any_io_executor ex, const std::vector<std::string>& dirs);
  // Returns after a change in a watched directory or after `fallback`, whichever comes first.
  boost::asio::awaitable<void> next(std::chrono::milliseconds fallback);
  std::size_t watched() const { return watched_; }

 private:
  boost::asio::posix::stream_descriptor inotify_;
  boost::asio::steady_timer timer_;
  std::size_t watched_ = 0;
};

// Where a driver installed after the agent shows up, for DriverWatch.
std::vector<std::string> driver_watch_dirs(const config::Options& options);

}  // namespace nvdra::drivers
