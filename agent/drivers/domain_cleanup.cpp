#include "agent/drivers/domain_cleanup.hpp"

#include "agent/drivers/driver_managed_claims.hpp"
#include "k8s/cancellation.hpp"

namespace nvdra::drivers {

void DomainCleanup::gone(std::string uid) {
  uids_.push_back(std::move(uid));
  queued_.notify();
}

void DomainCleanup::sweep() {
  sweep_ = true;
  queued_.notify();
}

boost::asio::awaitable<void> DomainCleanup::run(DriverManagedClaimHandler& handler) {
  for (;;) {
    co_await k8s::throw_if_cancelled();
    if (sweep_) {
      sweep_ = false;
      co_await handler.sweep_domains();
    } else if (!uids_.empty()) {
      auto uid = std::move(uids_.front());
      uids_.pop_front();
      co_await handler.domain_gone(std::move(uid));
    } else {
      co_await queued_.wait();
    }
  }
}

}  // namespace nvdra::drivers
