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

DriverManagedClaimHandler::DriverManagedClaimHandler(runtime::WorkerPool& pool, std::shared_ptr<k8s::ApiServer> api,
                                                     claims::CheckpointCommitter& committer, cdi::SpecStore& specs,
                                                     std::shared_ptr<ComputeDomainCache> cache, NodeLabels* labels,
                                                     k8s::EventRecorder* events, DriverManagedOptions options)
    : pool_(pool), api_(std::move(api)), committer_(committer), specs_(specs), cache_(std::move(cache)),
      labels_(labels), events_(events), options_(std::move(options)) {}

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
  if (!api_)
    co_return with_claim(make_error(ErrorCode::kUnavailable,
                                    "no Kubernetes API server is configured (--kubeconfig or in-cluster): cannot read "
                                    "the claim's allocation"),
                         claim);
  k8s::ClaimRef ref{claim.namespace_name, claim.name, claim.uid};
  auto allocation = co_await k8s::lookup_claim(*api_, ref, std::string(claims::kComputeDomainDriverName));
  if (!allocation) co_return with_claim(allocation.error(), claim);
  auto decided = decide(*allocation, claim, options_.gates);
  if (!decided) co_return with_claim(decided.error(), claim);
  if (decided->kind == DomainDeviceKind::kDaemon) co_return co_await prepare_daemon(claim, *decided);
  co_return co_await prepare_channel(claim, *decided);
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DriverManagedClaimHandler::complete(
    const kubelet::ClaimRef& claim, const Decided& d, CheckpointedClaim entry, std::vector<cdi::NamedEdits> edits,
    std::vector<std::string> extra_ids) {
  // Upstream writes a claim spec only when some device has edits (a node without a clique: none).
  std::vector<std::string> ids = std::move(extra_ids);
  if (!edits.empty()) {
    auto built = co_await pool_.run([&]() -> Result<cdi::BuiltSpec> {
      auto spec = cdi::build_claim_spec(cdi::kComputeDomainVendor, claim.uid, std::move(edits));
      if (!spec) return spec.error();
      if (auto st = specs_.write(*spec); !st) return st.error();
      return spec;
    });
    if (!built) co_return with_claim(built.error(), claim);
    ids.insert(ids.end(), built->device_ids.begin(), built->device_ids.end());
  }
  kubelet::PreparedDevice device{{d.result.base_request}, d.result.pool, d.result.device, std::move(ids),
                                 std::nullopt};
  entry.state = ClaimState::kPrepareCompleted;
  entry.prepared_devices = encode_domain_groups(d.kind, device, d.result.request, d.domain_id);
  if (auto st = co_await committer_.commit({ClaimUpdate{claim.uid, entry}}); !st) co_return with_claim(st.error(), claim);
  crash_point("imex-dm.prepare.after-completed");  // durable, kubelet not yet answered
  nvdra::logger("compute-domain")
      ->info("claim={} prepared device={} domain={} mode=driverManaged", claim.describe(), d.result.device,
             d.domain_id);
  co_return std::vector<kubelet::PreparedDevice>{std::move(device)};
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
    if (auto st = co_await labels_->load(); !st) co_return with_claim(st.error(), claim);
    auto entry = decode_domain_groups(it->second.prepared_devices, claim.describe());
    // A channel's label goes only when it names this claim's domain (another domain's label stays).
    const bool channel = entry && entry->kind == DomainDeviceKind::kChannel && !entry->domain.empty();
    if (channel && labels_->value(std::string(imex::kDomainLabel)) == entry->domain)
      if (auto st = co_await labels_->write(std::string(imex::kDomainLabel), std::nullopt); !st)
        co_return with_claim(st.error(), claim);
    crash_point("imex-dm.unprepare.after-label-check");
  }
  Status st = co_await pool_.run([&] { return specs_.remove_claim(cdi::kComputeDomainVendor, claim.uid); });
  if (!st) co_return with_claim(st.error(), claim);
  if (committer_.current().claims.count(claim.uid) == 0) co_return Status{};
  if (auto c = co_await committer_.commit({ClaimUpdate{claim.uid, std::nullopt}}); !c)
    co_return with_claim(c.error(), claim);
  crash_point("imex-dm.unprepare.after-erase");  // durable, kubelet not yet answered
  if (!gone_domain.empty()) co_await domain_gone(gone_domain);
  co_return Status{};
}

boost::asio::awaitable<Status> DriverManagedClaimHandler::unprepare(kubelet::ClaimRef claim) {
  auto st = co_await forget(claim);
  if (st) nvdra::logger("compute-domain")->info("claim={} unprepared", claim.describe());
  co_return st;
}

boost::asio::awaitable<std::vector<Error>> DriverManagedClaimHandler::recover() {
  std::vector<kubelet::ClaimRef> unfinished;
  for (const auto& [uid, entry] : committer_.current().claims)
    if (entry.state != ClaimState::kPrepareCompleted) unfinished.push_back({entry.ns, entry.name, uid});
  std::vector<Error> errors;
  for (const auto& claim : unfinished)
    if (auto st = co_await forget(claim); !st) errors.push_back(st.error());
  co_return errors;
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
