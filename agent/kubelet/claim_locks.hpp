#pragma once
// ClaimLocks — serialises work per claim UID: kubelet may send prepare and unprepare of the same claim
// in overlapping calls (retries, two plugin instances during a rolling update), and those must not
// interleave. Different UIDs never wait for each other. Waiters are served in arrival order.
// io_context thread only; a waiter that is cancelled leaves the queue and never takes the lock.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

namespace nvdra::kubelet {

class ClaimLocks {
 public:
  // Held lock for one UID; releasing hands it to the next waiter.
  class Guard {
   public:
    Guard() = default;
    Guard(ClaimLocks* owner, std::string uid) : owner_(owner), uid_(std::move(uid)) {}
    Guard(Guard&& o) noexcept : owner_(o.owner_), uid_(std::move(o.uid_)) { o.owner_ = nullptr; }
    Guard& operator=(Guard&&) = delete;
    Guard(const Guard&) = delete;
    ~Guard() {
      if (owner_) owner_->release(uid_);
    }

   private:
    ClaimLocks* owner_ = nullptr;
    std::string uid_;
  };

  explicit ClaimLocks(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}
  ClaimLocks(const ClaimLocks&) = delete;
  ClaimLocks& operator=(const ClaimLocks&) = delete;

  boost::asio::awaitable<Guard> acquire(std::string uid);

  // UIDs currently locked (tests, status).
  std::size_t held() const { return entries_.size(); }

 private:
  struct Waiter;
  void release(const std::string& uid);

  boost::asio::any_io_executor ex_;
  // Present = locked; the deque holds who waits next.
  std::unordered_map<std::string, std::deque<std::shared_ptr<Waiter>>> entries_;
};

}  // namespace nvdra::kubelet
