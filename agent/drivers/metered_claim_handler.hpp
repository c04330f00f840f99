#pragma once
// MeteredClaimHandler — a ClaimHandler decorator that feeds upstream's nvidia_dra_* series for one
// driver: requests in flight, duration, successes, errors by type; and, after each call, the
// PrepareCompleted devices by type and the MPS control daemons, counted from the checkpoint as
// upstream does. io_context thread only.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agent/drivers/claim_row_cache.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::metrics { class Metrics; }

namespace nvdra::drivers {

// Devices of PrepareCompleted claims by upstream's device_type (gpu, mig, vfio; channel, daemon;
// unknown), and the distinct MPS control daemons those claims hold.
struct CheckpointCounts {
  std::map<std::string, int64_t> devices_by_type;
  int64_t mps_daemons = 0;
};
CheckpointCounts count_prepared(const claims::Checkpoint& checkpoint);

// One claim's share of those counts: nothing unless PrepareCompleted.
struct ClaimCounts {
  std::map<std::string, int64_t> devices_by_type;
  std::vector<std::string> daemons;
};
ClaimCounts count_claim(const claims::CheckpointedClaim& claim);

// The sum of claims' counts, kept as claims come and go: a daemon counts while any claim holds it.
class CountTotals {
 public:
  void add(const ClaimCounts& c) { apply(c, 1); }
  void remove(const ClaimCounts& c) { apply(c, -1); }
  void clear() { by_type_.clear(), daemons_.clear(); }
  const std::map<std::string, int64_t>& devices_by_type() const { return by_type_; }
  int64_t mps_daemons() const { return static_cast<int64_t>(daemons_.size()); }

 private:
  void apply(const ClaimCounts& c, int64_t sign);
  std::map<std::string, int64_t> by_type_;
  std::map<std::string, int64_t> daemons_;  // daemon ID → claims holding it
};

class MeteredClaimHandler final : public kubelet::ClaimHandler {
 public:
  MeteredClaimHandler(std::string driver, kubelet::ClaimHandler& inner, metrics::Metrics& metrics,
                      std::function<const claims::Checkpoint*()> checkpoint);
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;
  void refresh();                        // the checkpoint gauges, counting every claim
  void refresh(const std::string& uid);  // after a call on claim `uid`: that claim counted again

 private:
  void publish();

  std::string driver_;
  kubelet::ClaimHandler& inner_;
  metrics::Metrics& metrics_;
  std::function<const claims::Checkpoint*()> checkpoint_;
  ClaimRowCache<ClaimCounts> counts_;
  CountTotals totals_;  // of counts_'s rows: after a call, one row out and one in, not a sum over all
};

}  // namespace nvdra::drivers
