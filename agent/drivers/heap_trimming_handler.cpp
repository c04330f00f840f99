#include "agent/drivers/heap_trimming_handler.hpp"

#include "agent/drivers/after_call.hpp"

namespace nvdra::drivers {

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> HeapTrimmingHandler::prepare(
    kubelet::ClaimRef claim) {
  trim_.begin();
  co_return co_await after_call(inner_.prepare(std::move(claim)), [this](const auto*) { trim_.end(); });
}

boost::asio::awaitable<Status> HeapTrimmingHandler::unprepare(kubelet::ClaimRef claim) {
  trim_.begin();
  co_return co_await after_call(inner_.unprepare(std::move(claim)), [this](const auto*) { trim_.end(); });
}

}  // namespace nvdra::drivers
