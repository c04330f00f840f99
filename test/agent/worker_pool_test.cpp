#include "agent/runtime/worker_pool.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <stdexcept>
#include <future>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

namespace asio = boost::asio;

namespace nvdra::runtime {
namespace {

TEST(WorkerPool, RunsOffTheLoopThreadAndResumesOnIt) {
  asio::io_context io;
  WorkerPool pool(2);
  std::thread::id loop_id, work_id, resumed_id;
  int result = 0;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    loop_id = std::this_thread::get_id();
    result = co_await pool.run([&] {
      work_id = std::this_thread::get_id();
      return 42;
    });
    resumed_id = std::this_thread::get_id();
  }, asio::detached);
  io.run();
  EXPECT_EQ(result, 42);
  EXPECT_NE(work_id, loop_id);
  EXPECT_EQ(resumed_id, loop_id);
}

TEST(WorkerPool, ExceptionsReachTheAwaitingCoroutine) {
  asio::io_context io;
  WorkerPool pool(1);
  std::string caught;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    try {
      co_await pool.run([]() -> int { throw std::runtime_error("fsync failed"); });
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  }, asio::detached);
  io.run();
  EXPECT_EQ(caught, "fsync failed");
}

TEST(WorkerPool, VoidWork) {
  asio::io_context io;
  WorkerPool pool(1);
  bool ran = false;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { co_await pool.run([&] { ran = true; }); }, asio::detached);
  io.run();
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace nvdra::runtime

namespace nvdra::runtime {
namespace {

// Cancelling the awaiting coroutine while fn runs must neither terminate the process nor lose fn's
// completion: the caller sees the result (or operation_aborted) once fn returns.
TEST(WorkerPool, CancellingTheAwaiterWhileWorkRunsIsSafe) {
  asio::io_context io;
  WorkerPool pool(1);
  asio::cancellation_signal cancel;
  std::promise<void> started;
  std::promise<void> release;
  auto release_future = release.get_future().share();
  bool finished = false;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    try {
      co_await pool.run([&] {
        started.set_value();
        release_future.wait();
        return 1;
      });
    } catch (const boost::system::system_error&) {
    }
    finished = true;
  }, asio::bind_cancellation_slot(cancel.slot(), asio::detached));
  std::thread releaser([&] {
    started.get_future().wait();
    asio::post(io, [&] { cancel.emit(asio::cancellation_type::all); });
    asio::post(io, [&] { release.set_value(); });
  });
  io.run();
  releaser.join();
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace nvdra::runtime
