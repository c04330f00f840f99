#include "agent/systemd/watchdog.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "agent/systemd/notifier.hpp"

namespace nvdra::systemd {

boost::asio::awaitable<void> Watchdog::run() {
  const auto interval = notifier_.watchdog_interval();
  if (!interval) co_return;
  const auto period = *interval / 2;
  nvdra::logger("systemd")->info("watchdog enabled interval_ms={} ping_ms={}", interval->count() / 1000,
                                 period.count() / 1000);
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  for (;;) {
    notifier_.watchdog();
    timer.expires_after(period);
    co_await timer.async_wait(boost::asio::use_awaitable);  // throws operation_aborted on stop
  }
}

}  // namespace nvdra::systemd
