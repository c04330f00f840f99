#include "agent/kubelet/no_devices_claim_handler.hpp"

namespace nvdra::kubelet {

boost::asio::awaitable<Result<std::vector<PreparedDevice>>> NoDevicesClaimHandler::prepare(ClaimRef claim) {
  Error e = make_error(ErrorCode::kFailedPrecondition,
                       "no devices are prepared by this build of the " + driver_ + " driver");
  e.claim = claim.describe();
  co_return e;
}

boost::asio::awaitable<Status> NoDevicesClaimHandler::unprepare(ClaimRef) { co_return Status{}; }

}  // namespace nvdra::kubelet
