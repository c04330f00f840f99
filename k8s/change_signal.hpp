#pragma once
// ChangeSignal: "something changed, look again" for one waiting coroutine. notify() before wait()
// is remembered, so no change is lost between a check and the next wait. Executor thread only.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

#include "k8s/cancellation.hpp"

namespace nvdra::k8s {

class ChangeSignal {
 public:
  explicit ChangeSignal(boost::asio::any_io_executor ex) : timer_(std::move(ex)) {}

  void notify() {
    pending_ = true;
    timer_.cancel();
  }

  // Returns at once when notified since the last wait, else when notified or after `max_wait`.
  boost::asio::awaitable<void> wait(std::chrono::steady_clock::duration max_wait = std::chrono::hours(24)) {
    if (!pending_) {
      timer_.expires_after(max_wait);
      co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      co_await throw_if_cancelled();
    }
    pending_ = false;
  }

 private:
  boost::asio::steady_timer timer_;
  bool pending_ = false;
};

}  // namespace nvdra::k8s
