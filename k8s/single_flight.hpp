#pragma once
// SingleFlight — one run at a time of a lookup that several coroutines ask for together (both
// drivers asking the server's facts, every API client asking for the kubeconfig): a caller that comes
// while a run is in flight waits for it to end, then takes its answer or, when it failed or was
// cancelled, runs it itself. Executor thread only.
//
//   co_await flight.wait_idle();
//   if (fresh answer) co_return it;
//   auto run = flight.begin();  // until `run` goes, also by cancellation
//   ... co_await the lookup, keep its answer ...
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <memory>
#include <vector>

namespace nvdra::k8s {

class SingleFlight {
 public:
  explicit SingleFlight(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}

  // Marks a run in flight until it is destroyed; then every waiter wakes.
  class Run {
   public:
    explicit Run(SingleFlight& flight) : flight_(flight) { flight_.running_ = true; }
    ~Run() {
      flight_.running_ = false;
      for (auto& w : flight_.waiters_) w->cancel();
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

   private:
    SingleFlight& flight_;
  };

  [[nodiscard]] Run begin() { return Run(*this); }

  // Returns when no run is in flight. Cancellable: throws operation_aborted.
  boost::asio::awaitable<void> wait_idle() {
    namespace asio = boost::asio;
    while (running_) {
      auto timer = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
      waiters_.push_back(timer);
      boost::system::error_code ec;
      co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
      std::erase(waiters_, timer);
      auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none)
        throw boost::system::system_error(asio::error::operation_aborted);
    }
  }

 private:
  boost::asio::any_io_executor ex_;
  bool running_ = false;
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters_;  // woken when a run ends
};

}  // namespace nvdra::k8s
