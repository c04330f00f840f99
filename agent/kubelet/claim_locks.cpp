#include "agent/kubelet/claim_locks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace asio = boost::asio;

namespace nvdra::kubelet {

// A waiter sleeps on a timer that never expires; release() wakes it by cancelling the timer after
// marking it granted, so "woken" and "cancelled" are told apart by the flag, not the error code.
struct ClaimLocks::Waiter {
  explicit Waiter(const asio::any_io_executor& ex) : wake(ex, asio::steady_timer::time_point::max()) {}
  asio::steady_timer wake;
  bool granted = false;
};

asio::awaitable<ClaimLocks::Guard> ClaimLocks::acquire(std::string uid) {
  auto it = entries_.find(uid);
  if (it == entries_.end()) {
    entries_.emplace(uid, std::deque<std::shared_ptr<Waiter>>{});
    co_return Guard(this, std::move(uid));
  }
  auto waiter = std::make_shared<Waiter>(ex_);
  it->second.push_back(waiter);
  auto leave_queue = [this, &uid, &waiter] {
    auto& queue = entries_.at(uid);
    queue.erase(std::remove(queue.begin(), queue.end(), waiter), queue.end());
  };
  try {
    // Throws at once when the caller was cancelled before it got here.
    co_await waiter->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  } catch (...) {
    if (waiter->granted) release(uid);  // woken and cancelled in the same turn: pass it on
    else leave_queue();
    throw;
  }
  if (waiter->granted) co_return Guard(this, std::move(uid));
  // Cancelled while queued: leave the queue so release() never hands the lock to a dead waiter.
  leave_queue();
  throw boost::system::system_error(asio::error::operation_aborted, "waiting for claim " + uid);
}

void ClaimLocks::release(const std::string& uid) {
  auto it = entries_.find(uid);
  if (it == entries_.end()) return;
  if (it->second.empty()) {
    entries_.erase(it);
    return;
  }
  auto next = it->second.front();
  it->second.pop_front();
  next->granted = true;
  next->wake.cancel();
}

}  // namespace nvdra::kubelet
