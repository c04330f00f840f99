#pragma once
// FakeClaimHandler — the test implementation of kubelet::ClaimHandler. Claims it knows (by UID)
// prepare to their devices; any other claim fails with NotFound. It counts calls and the handler
// coroutines alive right now, and can hold every prepare until a number of them are in flight
// (to prove concurrency without timing) or forever (to prove cancellation leaves nothing behind).
// io_context thread only, except the atomic counters.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::kubelet::testing {

class FakeClaimHandler final : public ClaimHandler {
 public:
  explicit FakeClaimHandler(boost::asio::any_io_executor ex)
      : release_(ex, boost::asio::steady_timer::time_point::max()) {}

  void know(const std::string& uid, std::vector<PreparedDevice> devices) { known_[uid] = std::move(devices); }
  // Every prepare waits until `n` prepares are in flight at once, then all proceed.
  void hold_until_in_flight(int n) { hold_until_ = n; }
  // Every prepare and unprepare waits until cancelled.
  void hang() { hang_ = true; }

  boost::asio::awaitable<Result<std::vector<PreparedDevice>>> prepare(ClaimRef claim) override {
    Alive alive(*this);
    ++prepares;
    deadlines.push_back(claim.deadline);
    co_await maybe_hold();
    auto it = known_.find(claim.uid);
    if (it == known_.end()) co_return make_error(ErrorCode::kNotFound, "claim is not known to the fake handler");
    co_return it->second;
  }

  boost::asio::awaitable<Status> unprepare(ClaimRef) override {
    Alive alive(*this);
    ++unprepares;
    if (hang_) co_await wait_released();
    co_return Status{};
  }

  std::atomic<int> prepares{0};
  std::vector<std::optional<std::chrono::steady_clock::time_point>> deadlines;  // each prepare's ClaimRef::deadline
  std::atomic<int> unprepares{0};
  std::atomic<int> live{0};           // handler coroutines alive now
  std::atomic<int> max_in_flight{0};  // most prepares seen at once

 private:
  struct Alive {
    explicit Alive(FakeClaimHandler& h) : h_(h) { ++h_.live; }
    ~Alive() { --h_.live; }
    FakeClaimHandler& h_;
  };

  boost::asio::awaitable<void> maybe_hold() {
    ++in_flight_;
    if (in_flight_ > max_in_flight) max_in_flight = in_flight_;
    struct Leave {
      int& n;
      ~Leave() { --n; }
    } leave{in_flight_};
    if (hang_) co_await wait_released();
    if (!hold_until_) co_return;
    if (in_flight_ >= *hold_until_) {
      reached_ = true;
      release_.cancel();  // release_ never expires: cancel() wakes every waiter
    }
    while (!reached_) co_await wait_released();
  }

  // Ends when release_ is cancelled by maybe_hold(); a cancellation of the caller ends it too,
  // with an exception, which is what the hang mode is for.
  boost::asio::awaitable<void> wait_released() {
    (void)co_await release_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    if (hang_ || !reached_) throw boost::system::system_error(boost::asio::error::operation_aborted, "fake handler cancelled");
  }

  boost::asio::steady_timer release_;
  std::map<std::string, std::vector<PreparedDevice>> known_;
  std::optional<int> hold_until_;
  int in_flight_ = 0;
  bool reached_ = false;
  bool hang_ = false;
};

}  // namespace nvdra::kubelet::testing
