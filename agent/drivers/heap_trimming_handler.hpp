#pragma once
// HeapTrimmingHandler — a ClaimHandler decorator that tells its QuietTrim when each call begins and
// ends, so that the heap's free pages go back to the kernel once every call of a burst has ended and
// no new one came for the quiet period. A burst of concurrent prepares frees megabytes that glibc
// otherwise keeps resident for good (issue #16: idle RSS). io_context thread only.
#include "agent/drivers/quiet_trim.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::drivers {

class HeapTrimmingHandler final : public kubelet::ClaimHandler {
 public:
  HeapTrimmingHandler(kubelet::ClaimHandler& inner, QuietTrim& trim) : inner_(inner), trim_(trim) {}
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;

 private:
  kubelet::ClaimHandler& inner_;
  QuietTrim& trim_;
};

}  // namespace nvdra::drivers
