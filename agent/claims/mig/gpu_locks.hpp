#pragma once
// GpuLocks — one asynchronous lock per GPU, so MIG changes on one GPU are serialised (NVML's
// placement checks and the MIG-mode toggle are not atomic across calls) while different GPUs
// proceed in parallel. Waiters queue in arrival order and are handed the lock directly. Use from
// one io_context thread only (the claims pipeline's). A waiter cancelled while queued leaves the
// queue and gets kCancelled; the holder's Guard releases on destruction.
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <deque>
#include <map>
#include <memory>
#include <string>

#include "agent/base/result.hpp"

namespace nvdra::claims {

class GpuLocks {
  struct Waiter {
    explicit Waiter(boost::asio::any_io_executor ex) : timer(ex, boost::asio::steady_timer::time_point::max()) {}
    boost::asio::steady_timer timer;
    bool granted = false;
  };
  struct Queue {
    bool held = false;
    std::deque<std::shared_ptr<Waiter>> waiters;
  };

 public:
  class Guard {
   public:
    Guard() = default;
    Guard(GpuLocks* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    Guard(Guard&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), key_(std::move(o.key_)) {}
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (owner_) owner_->release(key_);
    }

   private:
    GpuLocks* owner_ = nullptr;
    std::string key_;
  };

  boost::asio::awaitable<Result<std::shared_ptr<Guard>>> lock(std::string key) {
    Queue& q = queues_[key];
    if (!q.held) {
      q.held = true;
      co_return std::make_shared<Guard>(this, std::move(key));
    }
    auto w = std::make_shared<Waiter>(co_await boost::asio::this_coro::executor);
    q.waiters.push_back(w);
    boost::system::error_code ec;
    co_await w->timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (!w->granted) {
      std::erase(queues_[key].waiters, w);
      co_return make_error(ErrorCode::kCancelled, "cancelled while waiting for another MIG change on GPU " + key);
    }
    co_return std::make_shared<Guard>(this, std::move(key));
  }

 private:
  void release(const std::string& key) {
    Queue& q = queues_[key];
    if (q.waiters.empty()) {
      queues_.erase(key);
      return;
    }
    auto next = q.waiters.front();
    q.waiters.pop_front();
    next->granted = true;  // ownership passes directly: `held` stays true
    next->timer.cancel();
  }

  std::map<std::string, Queue> queues_;
};

}  // namespace nvdra::claims
