#pragma once
// HeapTrimmingHandler — a ClaimHandler decorator that hands the heap's free pages back to the kernel
// (malloc_trim) once every call of a burst has ended and no new one came for `quiet`. A burst of
// concurrent prepares frees megabytes that glibc otherwise keeps resident for good (issue #16: idle
// RSS). The trim runs on the WorkerPool: it walks the heap under the arena lock. io_context thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

class HeapTrimmingHandler final : public kubelet::ClaimHandler {
 public:
  using Trim = std::function<void()>;
  // Between the calls of one burst (a pod's claims, kubelet's retries) there are milliseconds.
  static constexpr std::chrono::milliseconds kQuiet{200};
  static void malloc_trim();  // the real Trim: glibc's malloc_trim(0)

  HeapTrimmingHandler(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, kubelet::ClaimHandler& inner,
                      std::chrono::milliseconds quiet = kQuiet, Trim trim = &HeapTrimmingHandler::malloc_trim);
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;

 private:
  void call_ended();

  runtime::WorkerPool& workers_;
  kubelet::ClaimHandler& inner_;
  std::chrono::milliseconds quiet_;
  Trim trim_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<int> in_flight_ = std::make_shared<int>(0);  // shared with a pending timer handler
};

}  // namespace nvdra::drivers
