#pragma once
// MeteredClaimHandler — a ClaimHandler decorator that feeds upstream's nvidia_dra_* series for one
// driver: requests in flight, duration, successes, errors by type; and, after each call, the
// PrepareCompleted devices by type and the MPS control daemons, counted from the checkpoint as
// upstream does. io_context thread only.
#include <functional>
#include <map>
#include <string>

#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::claims { struct Checkpoint; }
namespace nvdra::metrics { class Metrics; }

namespace nvdra::drivers {

// Devices of PrepareCompleted claims by upstream's device_type (gpu, mig, vfio; channel, daemon;
// unknown), and the distinct MPS control daemons those claims hold.
struct CheckpointCounts {
  std::map<std::string, int64_t> devices_by_type;
  int64_t mps_daemons = 0;
};
CheckpointCounts count_prepared(const claims::Checkpoint& checkpoint);

class MeteredClaimHandler final : public kubelet::ClaimHandler {
 public:
  MeteredClaimHandler(std::string driver, kubelet::ClaimHandler& inner, metrics::Metrics& metrics,
                      std::function<const claims::Checkpoint*()> checkpoint);
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;
  void refresh();  // the checkpoint gauges, now

 private:
  std::string driver_;
  kubelet::ClaimHandler& inner_;
  metrics::Metrics& metrics_;
  std::function<const claims::Checkpoint*()> checkpoint_;
};

}  // namespace nvdra::drivers
