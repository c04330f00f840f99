#include "agent/drivers/heap_trimming_handler.hpp"

#include <malloc.h>

#include <boost/asio/post.hpp>

#include "agent/drivers/after_call.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::drivers {

void HeapTrimmingHandler::malloc_trim() { ::malloc_trim(0); }

HeapTrimmingHandler::HeapTrimmingHandler(boost::asio::any_io_executor ex, runtime::WorkerPool& workers,
                                         kubelet::ClaimHandler& inner, std::chrono::milliseconds quiet, Trim trim)
    : workers_(workers), inner_(inner), quiet_(quiet), trim_(std::move(trim)), timer_(ex) {}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> HeapTrimmingHandler::prepare(
    kubelet::ClaimRef claim) {
  ++*in_flight_;
  co_return co_await after_call(inner_.prepare(std::move(claim)), [this](const auto*) { call_ended(); });
}

boost::asio::awaitable<Status> HeapTrimmingHandler::unprepare(kubelet::ClaimRef claim) {
  ++*in_flight_;
  co_return co_await after_call(inner_.unprepare(std::move(claim)), [this](const auto*) { call_ended(); });
}

void HeapTrimmingHandler::call_ended() {
  if (--*in_flight_ > 0) return;
  // Re-arming aborts the previous wait: one trim per quiet period, none while calls come. The
  // handler holds no `this`: it may run after this decorator is gone (shutdown).
  timer_.expires_after(quiet_);
  timer_.async_wait([in_flight = in_flight_, pool = &workers_, trim = trim_](boost::system::error_code ec) {
    if (!ec && *in_flight == 0) boost::asio::post(pool->executor(), trim);
  });
}

}  // namespace nvdra::drivers
