// StopSignals over signalfd(2); see the header for why not asio::signal_set.
#include "agent/runtime/stop_signals.hpp"

#include <signal.h>
#include <sys/signalfd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <system_error>

namespace nvdra::runtime {
namespace {

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

int open_signalfd() {
  const sigset_t set = stop_set();
  // Blocking again is harmless and keeps a caller that skipped block_stop_signals() correct for
  // this thread at least.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
  return fd;
}

}  // namespace

void block_stop_signals() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

StopSignals::StopSignals(boost::asio::any_io_executor ex) : fd_(ex, open_signalfd()) {}

boost::asio::awaitable<int> StopSignals::wait() {
  signalfd_siginfo info{};
  // signalfd reads whole records: one read of one record's size returns one signal.
  co_await boost::asio::async_read(fd_, boost::asio::buffer(&info, sizeof info), boost::asio::use_awaitable);
  co_return static_cast<int>(info.ssi_signo);
}

void spawn_signal_defaults(posix_spawnattr_t& attr) {
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigset_t defaults = stop_set();
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

}  // namespace nvdra::runtime
