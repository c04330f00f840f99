#pragma once
// FakeHealthSource — the test implementation of kubelet::HealthSource: set() replaces the report
// and wakes every watcher. io_context thread only.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/kubelet/health_source.hpp"

namespace nvdra::kubelet::testing {

class FakeHealthSource final : public HealthSource {
 public:
  explicit FakeHealthSource(boost::asio::any_io_executor ex)
      : changed_(ex, boost::asio::steady_timer::time_point::max()) {}

  // changed_ never expires; cancel() wakes every watcher and leaves it armed for the next wait.
  void set(std::vector<DeviceHealth> devices) {
    snap_.devices = std::move(devices);
    ++snap_.generation;
    changed_.cancel();
  }

  HealthSnapshot snapshot() const override { return snap_; }

  boost::asio::awaitable<HealthSnapshot> watch(uint64_t after) override {
    while (snap_.generation <= after) {
      auto [ec] = co_await changed_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      // A per-operation cancel also ends the wait with operation_aborted: tell it from set().
      if (snap_.generation <= after) throw boost::system::system_error(ec, "health watch cancelled");
    }
    co_return snap_;
  }

 private:
  boost::asio::steady_timer changed_;
  HealthSnapshot snap_;
};

}  // namespace nvdra::kubelet::testing
