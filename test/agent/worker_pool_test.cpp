#include "agent/runtime/worker_pool.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <stdexcept>
#include <thread>

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
