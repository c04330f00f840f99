#include "agent/drivers/until_ready.hpp"

#include <memory>

#include "k8s/change_signal.hpp"

namespace nvdra::drivers {

boost::asio::awaitable<bool> until_ready(runtime::Readiness& readiness, boost::asio::any_io_executor ex,
                                         std::chrono::milliseconds at_most) {
  if (readiness.ready()) co_return true;
  // The readiness keeps its callbacks until it fires: a waiter gone by then must not be reached.
  auto ready = std::make_shared<k8s::ChangeSignal>(std::move(ex));
  readiness.on_ready([weak = std::weak_ptr<k8s::ChangeSignal>(ready)] {
    if (auto r = weak.lock()) r->notify();
  });
  co_await ready->wait(at_most);
  co_return readiness.ready();
}

}  // namespace nvdra::drivers
