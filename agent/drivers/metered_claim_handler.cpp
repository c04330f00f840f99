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

void CountTotals::apply(const ClaimCounts& c, int64_t sign) {
  const auto step = [sign](std::map<std::string, int64_t>& m, const std::string& key, int64_t n) {
    if ((m[key] += sign * n) == 0) m.erase(key);
  };
  for (const auto& [type, n] : c.devices_by_type) step(by_type_, type, n);
  // A claim names its daemon once per device group; it holds the daemon once.
  const std::set<std::string> distinct(c.daemons.begin(), c.daemons.end());
  for (const auto& id : distinct) step(daemons_, id, 1);
}

CheckpointCounts count_prepared(const claims::Checkpoint& checkpoint) {
  CountTotals totals;
  for (const auto& [uid, claim] : checkpoint.claims) totals.add(count_claim(claim));
  return {totals.devices_by_type(), totals.mps_daemons()};
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
  totals_.clear();
  if (!cp) return counts_.forget();
  counts_.rebuild(*cp);
  for (const auto& [uid, row] : counts_.rows()) totals_.add(row);
  publish();
}

// After one call only that claim is counted again (ClaimRowCache), and the totals change by its old
// and new counts; a cache that had to count every claim again gives the totals again.
void MeteredClaimHandler::refresh(const std::string& uid) {
  const auto* cp = checkpoint_();
  if (!cp) return refresh();
  const auto rebuilds = counts_.rebuilds();
  const auto& rows = counts_.rows();
  if (auto old = rows.find(uid); old != rows.end()) totals_.remove(old->second);
  counts_.update(*cp, std::array<std::string, 1>{uid});
  if (counts_.rebuilds() != rebuilds) {
    totals_.clear();
    for (const auto& [id, row] : rows) totals_.add(row);
  } else if (auto now = rows.find(uid); now != rows.end()) {
    totals_.add(now->second);
  }
  publish();
}

void MeteredClaimHandler::publish() {
  metrics_.set_prepared_devices(driver_, totals_.devices_by_type());
  if (driver_ == config::kGpuDriverName) metrics_.set_mps_daemons(driver_, totals_.mps_daemons());
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
