// StopSignals — SIGINT, SIGTERM and SIGHUP as an awaitable on the loop, through a signalfd.
//
// Why not asio::signal_set: a signal handler runs on whichever thread the kernel picks, and a
// thread parked in a futex of a library we do not build (gRPC's pools) may be that thread. Under
// ThreadSanitizer such a handler is deferred until the thread next enters an intercepted call,
// which an idle pool thread never does: a SIGTERM during start-up was never seen. Blocking the
// three signals in every thread, before the first thread exists, and reading them from a signalfd
// in the loop leaves no thread to pick. Children get a clean mask back (spawn_signal_defaults).
#pragma once

#include <spawn.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace nvdra::runtime {

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread; threads made later inherit the mask.
// Call first thing in main(), before anything can start a thread.
void block_stop_signals();

class StopSignals {
 public:
  explicit StopSignals(boost::asio::any_io_executor ex);  // throws std::system_error without a signalfd
  // The next stop signal's number; cancellable like any read on the loop.
  boost::asio::awaitable<int> wait();

 private:
  boost::asio::posix::stream_descriptor fd_;
};

// For posix_spawn: an empty signal mask and default dispositions for the blocked stop signals and
// SIGPIPE (ignored in the agent), so a helper program reacts to signals as if started by a shell.
void spawn_signal_defaults(posix_spawnattr_t& attr);

}  // namespace nvdra::runtime
