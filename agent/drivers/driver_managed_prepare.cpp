// DriverManagedClaimHandler's daemon and channel prepares (driver_managed_claims.hpp).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/drivers/domain_cache.hpp"
#include "agent/drivers/driver_managed_claims.hpp"
#include "agent/drivers/driver_managed_steps.hpp"
#include "agent/drivers/event_reporting.hpp"
#include "agent/drivers/node_labels.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/device_edits.hpp"
#include "cdi/naming.hpp"
#include "imex/driver_managed.hpp"
#include "imex/prepare_rules.hpp"
#include "k8s/event_recorder.hpp"

namespace nvdra::drivers {

namespace fs = std::filesystem;
using claims::CheckpointedClaim;
using claims::ClaimState;
using claims::ClaimUpdate;

namespace {

inline constexpr unsigned kChannelCount = 2048;  // upstream's getImexChannelCount
inline constexpr const char* kReasonNoClique = "NoNVLinkClique";

Error not_found(const std::string& uid) {
  Error e = make_error(ErrorCode::kNotFound, "ComputeDomain not found: " + uid + imex::kPermanent);
  e.field = "domainID";
  return e;
}

}  // namespace

// A ComputeDomain created a moment ago may not have reached the watch yet: a miss waits this long for
// it (never past the call's wait bound) before the permanent "not found".
constexpr std::chrono::seconds kDomainArrival{5};

// How long a prepare may wait for the watches: until shortly before kubelet's deadline for this call,
// so that kubelet reads the reason rather than DEADLINE_EXCEEDED; the fixed bound when the call has
// none. The margin (a tenth of what is left, at most 1 s) covers answering.
WaitBound DriverManagedClaimHandler::wait_bound(const kubelet::ClaimRef& claim) const {
  const auto now = std::chrono::steady_clock::now();
  if (!claim.deadline)
    return {now + options_.readiness_wait,
            "waited " + std::to_string(options_.readiness_wait.count()) + " ms, the call had no deadline"};
  const auto left = std::max(std::chrono::steady_clock::duration::zero(), *claim.deadline - now);
  const auto margin = std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1), left / 10);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left - margin).count();
  return {now + (left - margin), "waited " + std::to_string(ms) + " ms, until just before kubelet's deadline"};
}

boost::asio::awaitable<std::optional<DomainInfo>> DriverManagedClaimHandler::find_domain(const std::string& uid,
                                                                                        const WaitBound& bound) {
  const auto deadline = std::min(bound.until, std::chrono::steady_clock::now() + kDomainArrival);
  for (;;) {
    auto domain = cache_->domain(uid);
    if (domain || std::chrono::steady_clock::now() >= deadline) co_return domain;
    co_await cache_->wait_change(deadline);
  }
}

boost::asio::awaitable<Status> DriverManagedClaimHandler::await_synced(const WaitBound& bound) {
  while (!cache_->synced()) {
    if (std::chrono::steady_clock::now() >= bound.until)
      co_return make_error(ErrorCode::kUnavailable, "the ComputeDomain and ComputeDomainClique watches have not "
                                                    "listed yet (is the API server reachable?; " + bound.why + ")");
    co_await cache_->wait_change(bound.until);
  }
  co_return Status{};
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DriverManagedClaimHandler::prepare_daemon(
    const kubelet::ClaimRef& claim, const Decided& d) {
  auto c = start_prepare(claim, d);
  if (auto st = co_await await_synced(c.bound); !st) co_return with_claim(st.error(), claim);
  auto domain = co_await find_domain(d.domain_id, c.bound);
  if (!domain) co_return with_claim(not_found(d.domain_id), claim);
  const auto dir = fs::path(options_.plugin_dir) / "domains" / d.domain_id;
  cdi::ImexDaemon daemon{options_.clique_id, domain->uid, domain->name, domain->ns, dir.string(), options_.caps_major,
                         options_.fabric_mgmt};
  c.edits.push_back({std::string(d.result.device), cdi::imex_daemon_edits(daemon)});
  c.ids.push_back(cdi::qualified_device_id(cdi::kComputeDomainVendor, "device", "all"));
  co_return co_await run(daemon_steps_, c, d);
}

boost::asio::awaitable<Status> DriverManagedClaimHandler::check_domain(const std::string& uid,
                                                                       const kubelet::ClaimRef& claim,
                                                                       const WaitBound& bound) {
  if (auto st = co_await await_synced(bound); !st) co_return st;
  auto domain = co_await find_domain(uid, bound);
  if (!domain) co_return not_found(uid);
  if (domain->ns != claim.namespace_name)
    co_return make_error(ErrorCode::kFailedPrecondition,
                         "the ResourceClaim's namespace is different than the ComputeDomain's namespace: "
                         "ComputeDomain " + uid + " is in namespace \"" + domain->ns + "\", the claim in \"" +
                             claim.namespace_name + "\"" + imex::kPermanent);
  co_return Status{};
}

boost::asio::awaitable<Status> DriverManagedClaimHandler::await_ready(const std::string& uid,
                                                                      const kubelet::ClaimRef& claim,
                                                                      const WaitBound& bound) {
  const auto deadline = bound.until;
  bool waited = false;
  for (;;) {
    const auto r = cache_->readiness(uid, options_.clique_id, options_.use_cliques);
    if (r.ready) co_return Status{};
    if (!cache_->domain(uid)) co_return not_found(uid);  // deleted while this prepare waited
    if (std::chrono::steady_clock::now() >= deadline)
      co_return imex::not_ready_error(r.detail + " (" + bound.why + " for the IMEX daemon's Ready)");
    if (!waited)
      nvdra::logger("compute-domain")->info("claim={} waiting for IMEX daemon readiness: {}", claim.describe(),
                                            r.detail);
    waited = true;
    co_await cache_->wait_change(deadline);
  }
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DriverManagedClaimHandler::prepare_channel(
    const kubelet::ClaimRef& claim, const Decided& d) {
  for (const auto& [uid, held] : committer_.current().claims) {
    if (uid == claim.uid || held.state != ClaimState::kPrepareCompleted) continue;
    auto other = decode_domain_groups(held.prepared_devices, uid);
    if (other && other->kind == DomainDeviceKind::kChannel)
      co_return with_claim(imex::channel_conflict_error(uid), claim);
  }
  auto c = start_prepare(claim, d);
  if (auto st = co_await check_domain(d.domain_id, claim, c.bound); !st) co_return with_claim(st.error(), claim);
  // The entry names the domain from the start, so that an unprepare after a failed try removes the label.
  c.entry.prepared_devices = encode_domain_groups(DomainDeviceKind::kChannel, {}, d.result.request, d.domain_id);
  if (!options_.clique_id.empty()) {  // no clique: no spec, no device (upstream's answer)
    cdi::ContainerEdits edits;
    const unsigned count = d.allocation_mode == "All" ? kChannelCount : 1;
    for (unsigned id = 0; id < count; ++id) {
      auto one = cdi::imex_channel_edits(cdi::ImexChannel{id, options_.channel_major});
      edits.device_nodes.insert(edits.device_nodes.end(), one.device_nodes.begin(), one.device_nodes.end());
    }
    c.edits.push_back({std::string(d.result.device), std::move(edits)});
  }
  co_return co_await run(channel_steps_, c, d);
}

// After readiness on a node without a clique: upstream's answer (success, no device node), and the
// workload's owner is told why it has no channel.
void DriverManagedClaimHandler::tell_no_clique(const DomainPrepare& c) {
  if (!options_.clique_id.empty() || !events_) return;
  events_->record(k8s::EventInfo{claim_object(c.claim), k8s::kEventTypeWarning, kReasonNoClique, kActionPrepare,
                                 "node " + options_.pool + " has no NVLink clique (no GPU reports a fabric clique "
                                 "id): IMEX channel of ComputeDomain " + c.domain_id +
                                     " prepared without a device node, as upstream does"});
}

}  // namespace nvdra::drivers
