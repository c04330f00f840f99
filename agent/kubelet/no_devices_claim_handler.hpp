#pragma once
// NoDevicesClaimHandler — the ClaimHandler of a build without device preparation (until issue
// "GPU claims" lands): every prepare fails with a per-claim error that says so, every unprepare
// succeeds (nothing was prepared, and unprepare must accept unknown claims). It keeps the agent
// usable end to end with kubelet: registration, readiness and the RPC paths all run for real.
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::kubelet {

class NoDevicesClaimHandler final : public ClaimHandler {
 public:
  explicit NoDevicesClaimHandler(std::string driver_name) : driver_(std::move(driver_name)) {}
  boost::asio::awaitable<Result<std::vector<PreparedDevice>>> prepare(ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(ClaimRef claim) override;

 private:
  std::string driver_;
};

}  // namespace nvdra::kubelet
