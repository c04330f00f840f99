#include "agent/runtime/supervisor.hpp"

#include <gtest/gtest.h>

#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;

namespace nvdra::runtime {
namespace {

asio::awaitable<void> wait_forever() {
  asio::steady_timer t(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
  co_await t.async_wait(asio::use_awaitable);
}

TEST(Supervisor, StopCancelsEveryTaskAndReportsAllStopped) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  int finished = 0;
  for (int i = 0; i < 3; ++i)
    sup.spawn("t" + std::to_string(i), [&finished]() -> asio::awaitable<void> {
      struct Count { int& n; ~Count() { ++n; } } count{finished};
      co_await wait_forever();
    }, OnFailure::kRestart);
  bool all_stopped = false;
  sup.on_all_stopped([&] { all_stopped = true; });
  asio::post(io, [&] { sup.stop(); });
  io.run();
  EXPECT_EQ(finished, 3);
  EXPECT_TRUE(all_stopped);
  EXPECT_EQ(sup.exit_code(), 0);
  EXPECT_TRUE(sup.live_tasks().empty());
}

TEST(Supervisor, FailingTaskIsRestartedUntilItSucceeds) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  int attempts = 0;
  sup.spawn("flaky", [&attempts]() -> asio::awaitable<void> {
    if (++attempts < 3) throw std::runtime_error("boom");
    co_return;
  }, OnFailure::kRestart);
  io.run();
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(sup.exit_code(), 0);
}

// Issue #30: a value that is not a std::exception ended the task with no log and no restart.
TEST(Supervisor, TaskThrowingANonStdExceptionIsRestartedToo) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  int attempts = 0;
  sup.spawn("odd", [&attempts]() -> asio::awaitable<void> {
    if (++attempts < 3) throw 42;
    co_return;
  }, OnFailure::kRestart);
  io.run();
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(sup.exit_code(), 0);
}

TEST(Supervisor, FatalTaskThrowingANonStdExceptionStopsTheAgent) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  struct Odd {};
  sup.spawn("odd", []() -> asio::awaitable<void> {
    throw Odd{};
    co_return;
  }, OnFailure::kExitProcess);
  io.run();
  EXPECT_EQ(sup.exit_code(), 1);
}

TEST(Supervisor, FatalTaskStopsEverythingWithStatusOne) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  bool other_cancelled = false;
  sup.spawn("other", [&]() -> asio::awaitable<void> {
    try {
      co_await wait_forever();
    } catch (const boost::system::system_error&) {
      other_cancelled = true;
      throw;
    }
  }, OnFailure::kRestart);
  sup.spawn("fatal", []() -> asio::awaitable<void> {
    throw std::runtime_error("cannot go on");
    co_return;
  }, OnFailure::kExitProcess);
  io.run();
  EXPECT_EQ(sup.exit_code(), 1);
  EXPECT_TRUE(other_cancelled);
}

TEST(Supervisor, TaskIgnoringCancellationHitsTheDeadline) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  bool started = false;
  sup.spawn("stubborn", [&started]() -> asio::awaitable<void> {
    // Filters out every cancellation, so stop() cannot end the wait: only the deadline can.
    co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
    started = true;
    asio::steady_timer t(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    co_await t.async_wait(asio::use_awaitable);
  }, OnFailure::kRestart);
  bool deadline = false;
  bool all_stopped = false;
  sup.on_deadline([&] {
    deadline = true;
    io.stop();
  });
  sup.on_all_stopped([&] { all_stopped = true; });
  asio::post(io, [&] { sup.stop(std::chrono::milliseconds(20)); });
  io.run();
  EXPECT_TRUE(started);
  EXPECT_TRUE(deadline) << "a task that ignores cancellation must end in the deadline";
  EXPECT_FALSE(all_stopped);
  EXPECT_EQ(sup.live_tasks(), std::vector<std::string>{"stubborn"});
}

TEST(Supervisor, TaskHonouringCancellationEndsBeforeTheDeadline) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  sup.spawn("polite", []() -> asio::awaitable<void> { co_await wait_forever(); }, OnFailure::kRestart);
  bool deadline = false;
  bool all_stopped = false;
  sup.on_deadline([&] { deadline = true; });
  sup.on_all_stopped([&] { all_stopped = true; });
  // A grace of an hour: io.run() returns only if the task ended and the deadline timer was cancelled.
  asio::post(io, [&] { sup.stop(std::chrono::hours(1)); });
  io.run();
  EXPECT_FALSE(deadline);
  EXPECT_TRUE(all_stopped);
  EXPECT_TRUE(sup.live_tasks().empty());
}

TEST(Supervisor, TaskSpawnedAfterStopIsCancelledAtOnce) {
  asio::io_context io;
  Supervisor sup(io.get_executor());
  asio::post(io, [&] {
    sup.stop();
    sup.spawn("late", []() -> asio::awaitable<void> { co_await wait_forever(); }, OnFailure::kRestart);
  });
  io.run();
  EXPECT_TRUE(sup.live_tasks().empty());
}

}  // namespace
}  // namespace nvdra::runtime
