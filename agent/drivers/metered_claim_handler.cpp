#include "agent/drivers/metered_claim_handler.hpp"

#include <array>
#include <chrono>
#include <exception>
#include <set>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/drivers/after_call.hpp"
#include "agent/config/options.hpp"
#include "agent/metrics/metrics.hpp"

namespace nvdra::drivers {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One kubelet call measured: in flight from now until it returns or throws. A cancelled or throwing
// call is an error too: it ended without devices. The checkpoint gauges are refreshed after each.
template <class T>
boost::asio::awaitable<T> metered(MeteredClaimHandler& handler, metrics::Metrics& metrics, const std::string& driver,
                                  metrics::Operation op, std::string_view error, std::string uid,
                                  boost::asio::awaitable<T> call) {
  const auto start = Clock::now();
  metrics.request_started(driver, op);
  co_return co_await after_call(std::move(call), [&](const T* result) {
    metrics.request_finished(driver, op, seconds_since(start), result && result->ok() ? "" : error);
    handler.refresh(uid);
  });
}

// One checkpointed device entry: {"gpu":{…},"mig":null,…}; its type is the key that is not null.
std::string device_type(const boost::json::value& entry) {
  if (const auto* o = entry.if_object())
    for (const char* type : {"gpu", "mig", "vfio", "channel", "daemon"})
      if (auto it = o->find(type); it != o->end() && !it->value().is_null()) return type;
  return "unknown";
}

}  // namespace

ClaimCounts count_claim(const claims::CheckpointedClaim& claim) {
  ClaimCounts counts;
  if (claim.state != claims::ClaimState::kPrepareCompleted) return counts;
  for (const auto& group : claim.prepared_devices) {
    const auto* g = group.if_object();
    if (!g) continue;
    if (auto it = g->find("devices"); it != g->end() && it->value().is_array())
      for (const auto& entry : it->value().get_array()) ++counts.devices_by_type[device_type(entry)];
    if (auto it = g->find("configState"); it != g->end() && it->value().is_object())
      if (auto id = it->value().get_object().find("mpsControlDaemonID");
          id != it->value().get_object().end() && id->value().is_string() && !id->value().get_string().empty())
        counts.daemons.emplace_back(id->value().get_string());
  }
  return counts;
}

namespace {

// The counts of every claim together; a daemon that several claims share counts once.
template <class Claims, class CountsOf>
CheckpointCounts sum_counts(const Claims& claims, CountsOf counts_of) {
  CheckpointCounts counts;
  std::set<std::string> daemons;
  for (const auto& [uid, claim] : claims) {
    const ClaimCounts& one = counts_of(claim);
    for (const auto& [type, n] : one.devices_by_type) counts.devices_by_type[type] += n;
    daemons.insert(one.daemons.begin(), one.daemons.end());
  }
  counts.mps_daemons = static_cast<int64_t>(daemons.size());
  return counts;
}

}  // namespace

CheckpointCounts count_prepared(const claims::Checkpoint& checkpoint) {
  return sum_counts(checkpoint.claims, [](const claims::CheckpointedClaim& c) { return count_claim(c); });
}

MeteredClaimHandler::MeteredClaimHandler(std::string driver, kubelet::ClaimHandler& inner, metrics::Metrics& metrics,
                                         std::function<const claims::Checkpoint*()> checkpoint)
    : driver_(std::move(driver)),
      inner_(inner),
      metrics_(metrics),
      checkpoint_(std::move(checkpoint)),
      counts_([](const std::string&, const claims::CheckpointedClaim& c) { return count_claim(c); }) {}

void MeteredClaimHandler::refresh() {
  const auto* cp = checkpoint_();
  if (!cp) return counts_.forget();
  counts_.rebuild(*cp);
  publish();
}

// After one call only that claim is counted again (ClaimRowCache); the sum is over small cached
// counts, not the checkpoint's JSON.
void MeteredClaimHandler::refresh(const std::string& uid) {
  const auto* cp = checkpoint_();
  if (!cp) return refresh();
  counts_.update(*cp, std::array<std::string, 1>{uid});
  publish();
}

void MeteredClaimHandler::publish() {
  const auto counts = sum_counts(counts_.rows(), [](const ClaimCounts& c) -> const ClaimCounts& { return c; });
  metrics_.set_prepared_devices(driver_, counts.devices_by_type);
  if (driver_ == config::kGpuDriverName) metrics_.set_mps_daemons(driver_, counts.mps_daemons);
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> MeteredClaimHandler::prepare(
    kubelet::ClaimRef claim) {
  std::string uid = claim.uid;
  co_return co_await metered(*this, metrics_, driver_, metrics::Operation::kPrepare, metrics::kErrorPrepareDevices,
                             std::move(uid), inner_.prepare(std::move(claim)));
}

boost::asio::awaitable<Status> MeteredClaimHandler::unprepare(kubelet::ClaimRef claim) {
  std::string uid = claim.uid;
  co_return co_await metered(*this, metrics_, driver_, metrics::Operation::kUnprepare, metrics::kErrorUnprepareDevices,
                             std::move(uid), inner_.unprepare(std::move(claim)));
}

}  // namespace nvdra::drivers
