#pragma once
// ModeChangeCleanup — host-managed IMEX mode's unprepare of a channel claim that driver-managed mode
// (nvdra's or upstream's plugin) prepared before the node switched modes: the claim's node label
// resource.nvidia.com/computeDomain=<its domain> goes too (host-managed mode sets no label, so a
// label naming the claim's domain can only be that claim's). Everything else is the inner handler's.
#include <memory>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::drivers {

class NodeLabels;

class ModeChangeCleanup final : public kubelet::ClaimHandler {
 public:
  ModeChangeCleanup(kubelet::ClaimHandler& inner, claims::CheckpointCommitter& committer,
                    std::shared_ptr<NodeLabels> labels);

  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;

 private:
  kubelet::ClaimHandler& inner_;
  claims::CheckpointCommitter& committer_;
  std::shared_ptr<NodeLabels> labels_;
};

}  // namespace nvdra::drivers
