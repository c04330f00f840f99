// HeapTrimmingHandler: one trim once the last call of a burst has ended and the quiet period
// passed, failed calls included; none once its QuietTrim is gone.
#include "agent/drivers/heap_trimming_handler.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>

#include "agent/runtime/worker_pool.hpp"
#include "test/support/run_until_trimmed.hpp"

namespace nvdra::drivers {
namespace {

namespace asio = boost::asio;

// Every call waits at the gate until release(); fail makes prepares end with an error.
struct GatedHandler : kubelet::ClaimHandler {
  explicit GatedHandler(asio::io_context& io) : gate(io, asio::steady_timer::time_point::max()) {}
  asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef) override {
    ++waiting;
    co_await gate.async_wait(asio::as_tuple(asio::use_awaitable));
    if (fail) co_return make_error(ErrorCode::kInvalidArgument, "no");
    co_return std::vector<kubelet::PreparedDevice>{};
  }
  asio::awaitable<Status> unprepare(kubelet::ClaimRef) override {
    ++waiting;
    co_await gate.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return Status{};
  }
  void release() { gate.cancel(); }
  asio::steady_timer gate;
  int waiting = 0;
  bool fail = false;
};

kubelet::ClaimRef ref(const char* uid) { return {"ns", uid, uid}; }

TEST(HeapTrimmingHandler, TrimsOnceAfterTheLastCallOfABurstEnded) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  GatedHandler inner(io);
  std::atomic<int> trims{0};
  QuietTrim trim(io.get_executor(), workers, std::chrono::milliseconds(1), [&] {
    ++trims;
    io.stop();
  });
  HeapTrimmingHandler h(inner, trim);
  asio::co_spawn(io, h.prepare(ref("a")), asio::detached);
  asio::co_spawn(io, h.unprepare(ref("b")), asio::detached);
  asio::co_spawn(io, h.prepare(ref("c")), asio::detached);
  io.poll();
  ASSERT_EQ(inner.waiting, 3);  // the whole burst is in flight
  inner.release();
  EXPECT_EQ(run_until_trimmed(io, workers, trims), 1);
}

TEST(HeapTrimmingHandler, AFailedCallEndsTheBurstToo) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  GatedHandler inner(io);
  inner.fail = true;
  std::atomic<int> trims{0};
  QuietTrim trim(io.get_executor(), workers, std::chrono::milliseconds(1), [&] {
    ++trims;
    io.stop();
  });
  HeapTrimmingHandler h(inner, trim);
  bool failed = false;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { failed = !(co_await h.prepare(ref("a"))).ok(); },
                 asio::detached);
  io.poll();
  inner.release();
  EXPECT_EQ(run_until_trimmed(io, workers, trims), 1);
  EXPECT_TRUE(failed);
}

TEST(HeapTrimmingHandler, NoTrimOnceItsQuietTrimIsGone) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  GatedHandler inner(io);
  std::atomic<int> trims{0};
  {
    QuietTrim trim(io.get_executor(), workers, std::chrono::hours(1), [&] { ++trims; });
    HeapTrimmingHandler h(inner, trim);
    asio::co_spawn(io, h.prepare(ref("a")), asio::detached);
    io.poll();
    inner.release();
    io.poll();  // the call ended: the quiet period's timer is armed
  }
  io.run();  // returns once the destroyed timer's aborted wait has run: nothing else is left
  workers.join();
  EXPECT_EQ(trims.load(), 0);
}

}  // namespace
}  // namespace nvdra::drivers
