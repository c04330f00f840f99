#pragma once
// run_until_trimmed — the trim tests' loop: runs `io` until a trim has stopped it (deadline 30 s),
// then joins the pool, so that a trim still queued there is counted too. Returns the number of trims.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>

#include "agent/runtime/worker_pool.hpp"

namespace nvdra::drivers {

inline int run_until_trimmed(boost::asio::io_context& io, runtime::WorkerPool& workers, const std::atomic<int>& trims) {
  auto guard = boost::asio::make_work_guard(io);
  io.run_for(std::chrono::seconds(30));
  workers.join();
  return trims.load();
}

}  // namespace nvdra::drivers
