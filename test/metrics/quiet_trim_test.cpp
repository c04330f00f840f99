// QuietTrim: a request (the slices stored) trims once the quiet period passed; a request while tracked
// work is in flight waits for that work to end; requests close together make one trim.
#include "agent/drivers/quiet_trim.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <future>

#include "agent/runtime/worker_pool.hpp"
#include "test/support/run_until_trimmed.hpp"

namespace nvdra::drivers {
namespace {

namespace asio = boost::asio;

TEST(QuietTrim, ARequestTrimsOnceTheQuietPeriodPassed) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  std::atomic<int> trims{0};
  QuietTrim trim(io.get_executor(), workers, std::chrono::milliseconds(1), [&] {
    ++trims;
    io.stop();
  });
  trim.request();
  trim.request();  // the second re-arms the first one's wait: one trim for both
  EXPECT_EQ(run_until_trimmed(io, workers, trims), 1);
}

TEST(QuietTrim, ARequestDuringTrackedWorkWaitsForItsEnd) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  std::atomic<int> trims{0};
  // No quiet period: a wait armed by the request would be due at once, and poll() would run it.
  QuietTrim trim(io.get_executor(), workers, std::chrono::milliseconds(0), [&] {
    ++trims;
    io.stop();
  });
  trim.begin();
  trim.request();
  io.poll();
  std::promise<void> drained;  // the pool runs in order: once this job ran, a trim posted before it has too
  asio::post(workers.executor(), [&] { drained.set_value(); });
  drained.get_future().wait();
  EXPECT_EQ(trims.load(), 0) << "trimmed while a call was in flight";
  io.restart();
  trim.end();
  EXPECT_EQ(run_until_trimmed(io, workers, trims), 1);
}

}  // namespace
}  // namespace nvdra::drivers
