#include "agent/drivers/driver_managed_claims.hpp"

#include <boost/json.hpp>

#include <filesystem>
#include <set>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/claims/config/config_resolver.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/drivers/domain_cache.hpp"
#include "agent/drivers/driver_managed_steps.hpp"
#include "agent/drivers/node_labels.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "imex/channel_device.hpp"
#include "imex/driver_managed.hpp"
#include "imex/prepare_rules.hpp"
#include "k8s/api_server.hpp"
#include "k8s/claim_lookup.hpp"

namespace nvdra::drivers {

using claims::CheckpointedClaim;
using claims::ClaimState;
using claims::ClaimUpdate;

// The driver-managed claims' crash points around the shared bookkeeping (crash_points.txt, area imex-dm).
constexpr DomainCrashPoints kCrashPoints{[] { crash_point("imex-dm.prepare.after-started"); }, nullptr,
                                         [] { crash_point("imex-dm.prepare.after-completed"); }, nullptr,
                                         [] { crash_point("imex-dm.unprepare.after-erase"); }};

DriverManagedClaimHandler::DriverManagedClaimHandler(runtime::WorkerPool& pool, std::shared_ptr<k8s::ApiServer> api,
                                                     claims::CheckpointCommitter& committer, cdi::SpecStore& specs,
                                                     std::shared_ptr<ComputeDomainCache> cache, NodeLabels* labels,
                                                     k8s::EventRecorder* events, DriverManagedOptions options)
    : pool_(pool), api_(std::move(api)), committer_(committer), cache_(std::move(cache)), labels_(labels),
      events_(events), options_(std::move(options)), book_(pool, committer, specs, kCrashPoints),
      directory_step_(pool, options_.plugin_dir), label_step_(labels),
      readiness_step_([this](DomainPrepare& c) -> boost::asio::awaitable<Status> {
        if (auto st = co_await await_ready(c.domain_id, c.claim, c.bound); !st) co_return st;
        tell_no_clique(c);
        co_return Status{};
      }),
      daemon_steps_{&directory_step_, &book_.spec_step()},
      channel_steps_{&label_step_, &readiness_step_, &book_.spec_step()} {}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DriverManagedClaimHandler::prepare(
    kubelet::ClaimRef claim) {
  if (!options_.refusal.empty())
    co_return with_claim(make_error(ErrorCode::kFailedPrecondition,
                                    "the compute-domain driver refused to start in driver-managed IMEX mode: " +
                                        options_.refusal),
                         claim);
  const auto& claims = committer_.current().claims;
  if (auto it = claims.find(claim.uid); it != claims.end() && it->second.state == ClaimState::kPrepareCompleted) {
    auto entry = decode_domain_groups(it->second.prepared_devices, claim.describe());
    if (!entry) co_return with_claim(entry.error(), claim);
    co_return std::move(entry->devices);
  }
  if (!options_.clique_pending.empty())
    co_return with_claim(make_error(ErrorCode::kUnavailable,
                                    "this node's NVLink clique is not known yet (" + options_.clique_pending +
                                        "): the compute-domain driver offers no device until the fabric is "
                                        "COMPLETED; kubelet retries"),
                         claim);
  // Started but not completed (not ready yet, an error, a crash): prepare again over it; what the
  // first try made (label, directory, CDI spec) is written again, the same.
  co_return co_await prepare_new(std::move(claim));
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DriverManagedClaimHandler::prepare_new(
    kubelet::ClaimRef claim) {
  auto allocation = co_await read_domain_allocation(api_.get(), claim);
  if (!allocation) co_return allocation.error();
  auto decided = decide(*allocation, claim, options_.gates);
  if (!decided) co_return with_claim(decided.error(), claim);
  if (decided->kind == DomainDeviceKind::kDaemon) co_return co_await prepare_daemon(claim, *decided);
  co_return co_await prepare_channel(claim, *decided);
}

DomainPrepare DriverManagedClaimHandler::start_prepare(const kubelet::ClaimRef& claim, const Decided& d) const {
  return DomainPrepare{claim, d.domain_id, started_entry(claim, claims::encode_claim_status(d.recorded)), {}, {},
                       wait_bound(claim), {}};
}

// Not rolled back on failure: kubelet prepares again over what the first try made (label, directory, spec).
boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DriverManagedClaimHandler::run(
    const DomainSteps& steps, DomainPrepare& c, const Decided& d) {
  auto hooks = book_.hooks();
  hooks.rollback = [](DomainPrepare&) -> boost::asio::awaitable<Status> { co_return Status{}; };
  kubelet::PreparedDevice device{{d.result.base_request}, d.result.pool, d.result.device, {}, std::nullopt};
  c.encode = [device, kind = d.kind, request = d.result.request, domain = d.domain_id](
                 const std::vector<std::string>& ids) {
    auto prepared = device;
    prepared.cdi_device_ids = ids;
    return encode_domain_groups(kind, prepared, request, domain);
  };
  auto answer = co_await book_.run(steps, c, hooks, std::move(device));
  if (answer)
    nvdra::logger("compute-domain")
        ->info("claim={} prepared device={} domain={} mode=driverManaged", c.claim.describe(), d.result.device,
               d.domain_id);
  co_return answer;
}

boost::asio::awaitable<Status> DriverManagedClaimHandler::forget(const kubelet::ClaimRef& claim) {
  const auto& claims = committer_.current().claims;
  auto it = claims.find(claim.uid);
  std::string gone_domain;  // a daemon claim's domain that no longer exists: its directory goes after the entry
  if (it != claims.end() && cache_ && cache_->synced())
    if (auto entry = decode_domain_groups(it->second.prepared_devices, claim.describe());
        entry && entry->kind == DomainDeviceKind::kDaemon && !entry->domain.empty() && !cache_->domain(entry->domain))
      gone_domain = entry->domain;
  if (it != claims.end() && labels_) {
    auto entry = decode_domain_groups(it->second.prepared_devices, claim.describe());
    // A channel's label goes only when it names this claim's domain (another domain's label stays).
    const bool channel = entry && entry->kind == DomainDeviceKind::kChannel && !entry->domain.empty();
    DomainPrepare c{claim, channel ? entry->domain : std::string()};
    if (auto st = co_await label_step_.undo(c); !st) co_return with_claim(st.error(), claim);
  }
  if (auto st = co_await book_.forget(claim); !st) co_return st;
  if (!gone_domain.empty()) co_await domain_gone(gone_domain);
  co_return Status{};
}

boost::asio::awaitable<Status> DriverManagedClaimHandler::unprepare(kubelet::ClaimRef claim) {
  auto st = co_await forget(claim);
  if (st) nvdra::logger("compute-domain")->info("claim={} unprepared", claim.describe());
  co_return st;
}

boost::asio::awaitable<std::vector<Error>> DriverManagedClaimHandler::recover() {
  co_return co_await book_.recover(
      [this](kubelet::ClaimRef claim) -> boost::asio::awaitable<Status> { co_return co_await forget(claim); });
}

boost::asio::awaitable<void> DriverManagedClaimHandler::domain_gone(std::string uid) {
  for (const auto& [claim, entry] : committer_.current().claims) {
    auto groups = decode_domain_groups(entry.prepared_devices, claim);
    if (groups && groups->kind == DomainDeviceKind::kDaemon && groups->domain == uid) {
      nvdra::logger("compute-domain")
          ->info("domain={} deleted: its domain directory stays while daemon claim {} is prepared", uid, claim);
      co_return;
    }
  }
  const auto dir = std::filesystem::path(options_.plugin_dir) / "domains" / uid;
  auto removed = co_await pool_.run([dir] {
    std::error_code ec;
    const auto n = std::filesystem::remove_all(dir, ec);
    return ec ? -1 : static_cast<long>(n);
  });
  if (removed > 0)
    nvdra::logger("compute-domain")->info("domain={} deleted: removed its domain directory {}", uid, dir.string());
  else if (removed < 0)
    nvdra::logger("compute-domain")->warn("domain={} deleted: cannot remove {}, ignoring", uid, dir.string());
}

boost::asio::awaitable<void> DriverManagedClaimHandler::sweep_domains() {
  const auto root = std::filesystem::path(options_.plugin_dir) / "domains";
  auto names = co_await pool_.run([root] {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) out.push_back(e.path().filename().string());
    return out;
  });
  for (const auto& uid : names)
    if (!cache_->domain(uid)) co_await domain_gone(uid);
}

}  // namespace nvdra::drivers
