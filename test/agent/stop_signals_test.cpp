// StopSignals: the stop signals are blocked in every thread and read on the loop; children get
// them (and SIGPIPE) back at their defaults.
#include "agent/runtime/stop_signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <thread>

extern char** environ;

namespace asio = boost::asio;

namespace nvdra::runtime {
namespace {

bool blocked_here(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

TEST(StopSignals, AThreadMadeAfterBlockingHasEveryStopSignalBlocked) {
  block_stop_signals();
  bool all = false;
  std::thread([&] { all = blocked_here(SIGINT) && blocked_here(SIGTERM) && blocked_here(SIGHUP); }).join();
  EXPECT_TRUE(all);
}

TEST(StopSignals, ASignalSentToTheProcessFromAnotherThreadIsReadOnTheLoop) {
  block_stop_signals();
  asio::io_context io(1);
  StopSignals signals(io.get_executor());
  int got = 0;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { got = co_await signals.wait(); }, [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  // Sent while no wait is pending yet and from a thread that is not the loop's: it waits in the fd.
  std::thread([] { ::kill(::getpid(), SIGHUP); }).join();
  io.run();
  EXPECT_EQ(got, SIGHUP);
}

TEST(StopSignals, AWaitIsCancellable) {
  block_stop_signals();
  asio::io_context io(1);
  StopSignals signals(io.get_executor());
  asio::cancellation_signal stop;
  bool aborted = false;
  asio::co_spawn(io, signals.wait(), asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e, int) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const boost::system::system_error& err) {
      aborted = err.code() == asio::error::operation_aborted;
    }
  }));
  asio::post(io, [&] { stop.emit(asio::cancellation_type::all); });
  io.run();
  EXPECT_TRUE(aborted);
}

// The child's status after `sh -c 'kill -SIG $$; exit 0'`: killed by SIG when it is at its default.
int child_status_after_raising(int sig, bool with_defaults) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (with_defaults) spawn_signal_defaults(attr);
  const std::string script = "kill -" + std::to_string(sig) + " $$; exit 0";
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, argv[0], nullptr, &attr, const_cast<char**>(argv), environ), 0);
  posix_spawnattr_destroy(&attr);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(StopSignals, AChildGetsTheStopSignalsAndSigpipeBackAtTheirDefaults) {
  block_stop_signals();
  ::signal(SIGPIPE, SIG_IGN);  // as the agent's main() does
  // Without the attributes the child inherits the mask and the ignored SIGPIPE: it lives on.
  EXPECT_TRUE(WIFEXITED(child_status_after_raising(SIGTERM, false)));
  EXPECT_TRUE(WIFEXITED(child_status_after_raising(SIGPIPE, false)));
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) {
    const int status = child_status_after_raising(sig, true);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig;
  }
  ::signal(SIGPIPE, SIG_DFL);
}

}  // namespace
}  // namespace nvdra::runtime
