#include "agent/runtime/supervisor.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <stdexcept>

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
  sup.spawn("stubborn", []() -> asio::awaitable<void> {
    // A timer awaited after cancellation was already delivered: it does not see it.
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
    co_await t.async_wait(asio::use_awaitable);
  }, OnFailure::kRestart);
  bool deadline = false;
  sup.on_deadline([&] {
    deadline = true;
    io.stop();
  });
  asio::post(io, [&] { sup.stop(std::chrono::milliseconds(20)); });
  io.run();
  // The timer supports cancellation, so the task ends before the deadline; either way io.run returns.
  EXPECT_TRUE(sup.live_tasks().empty() || deadline);
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
