#include "agent/drivers/compute_domain_claims.hpp"

#include <simdjson.h>

#include <boost/json.hpp>

#include <optional>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/claims/config/config_resolver.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/drivers/domain_groups.hpp"
#include "agent/drivers/driver_managed_steps.hpp"
#include "agent/drivers/host_managed_plan.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"
#include "imex/channel_device.hpp"
#include "imex/prepare_rules.hpp"
#include "k8s/api_server.hpp"
#include "k8s/claim_lookup.hpp"

namespace nvdra::drivers {

namespace json = boost::json;
using claims::CheckpointedClaim;
using claims::ClaimState;
using claims::ClaimUpdate;

namespace {

// Upstream's CD checkpoint group (reference §6.1): channel device + configState with Go's
// capitalised field names.
json::array encode_groups(const kubelet::PreparedDevice& d, const std::string& request, const std::string& domain) {
  json::array cdi;
  for (const auto& id : d.cdi_device_ids) cdi.emplace_back(id);
  json::object device{{"Requests", json::array{json::value(request)}}, {"PoolName", d.pool_name},
                      {"DeviceName", d.device_name}, {"CDIDeviceIDs", std::move(cdi)}};
  json::object channel{{"info", json::object{{"id", imex::kChannelId}}}, {"device", std::move(device)}};
  json::object entry{{"channel", std::move(channel)}, {"daemon", nullptr}};
  json::object state{{"Type", "channel"}, {"ComputeDomain", domain}};
  return json::array{json::object{{"devices", json::array{std::move(entry)}}, {"configState", std::move(state)}}};
}

Result<std::vector<kubelet::PreparedDevice>> decode_groups(const json::array& groups, const std::string& claim) {
  std::vector<kubelet::PreparedDevice> out;
  auto bad = [&claim](const std::string& what) {
    return make_error(ErrorCode::kFailedPrecondition,
                      "checkpoint entry of claim " + claim + " is not a compute-domain channel entry: " + what);
  };
  for (const auto& g : groups) {
    const auto* devices = g.is_object() ? g.as_object().if_contains("devices") : nullptr;
    if (!devices || !devices->is_array()) return bad("no devices list");
    for (const auto& e : devices->as_array()) {
      const auto* ch = e.is_object() ? e.as_object().if_contains("channel") : nullptr;
      const auto* dev = ch && ch->is_object() ? ch->as_object().if_contains("device") : nullptr;
      if (!dev || !dev->is_object()) return bad("no channel device");
      out.push_back(prepared_device_of(dev->as_object()));
    }
  }
  return out;
}

bool holds_channel(const CheckpointedClaim& entry) {
  for (const auto& g : entry.prepared_devices) {
    const auto* devices = g.is_object() ? g.as_object().if_contains("devices") : nullptr;
    if (!devices || !devices->is_array()) continue;
    for (const auto& e : devices->as_array())
      if (const auto* ch = e.is_object() ? e.as_object().if_contains("channel") : nullptr; ch && !ch->is_null())
        return true;
  }
  return false;
}

}  // namespace

// The host-managed channel's crash points (crash_points.txt, area imex).
constexpr DomainCrashPoints kCrashPoints{
    [] { crash_point("imex.prepare.after-started"); }, [] { crash_point("imex.prepare.after-cdi-write"); },
    [] { crash_point("imex.prepare.after-completed"); }, [] { crash_point("imex.unprepare.after-cdi-remove"); },
    [] { crash_point("imex.unprepare.after-erase"); }};

ComputeDomainClaimHandler::ComputeDomainClaimHandler(runtime::WorkerPool& pool, std::shared_ptr<k8s::ApiServer> api,
                                                     claims::CheckpointCommitter& committer, cdi::SpecStore& specs,
                                                     ComputeDomainClaimOptions options, PrepareGate gate)
    : api_(std::move(api)), committer_(committer), options_(std::move(options)), gate_(std::move(gate)),
      book_(pool, committer, specs, kCrashPoints), steps_{&book_.spec_step()} {}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> ComputeDomainClaimHandler::prepare(
    kubelet::ClaimRef claim) {
  if (!options_.host_managed) co_return with_claim(imex::driver_managed_error(), claim);
  const auto& claims = committer_.current().claims;
  if (auto it = claims.find(claim.uid); it != claims.end()) {
    if (it->second.state == ClaimState::kPrepareCompleted) {
      auto devices = decode_groups(it->second.prepared_devices, claim.describe());
      if (!devices) co_return with_claim(devices.error(), claim);
      co_return std::move(*devices);
    }
    // Started but not completed (an error, a cancellation, a crash): only a CDI spec may exist.
    if (auto st = co_await forget(claim); !st) co_return st.error();
  }
  co_return co_await prepare_new(std::move(claim));
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> ComputeDomainClaimHandler::prepare_new(
    kubelet::ClaimRef claim) {
  auto allocation = co_await read_domain_allocation(api_.get(), claim);
  if (!allocation) co_return allocation.error();
  auto plan = plan_host_managed(*allocation, claim, options_.gates);
  if (!plan) co_return with_claim(plan.error(), claim);
  if (auto st = co_await admit(*plan, claim); !st) co_return st.error();
  // Step 8: PrepareStarted (durable before the side effect), CDI spec, PrepareCompleted.
  const auto& result = plan->result;
  kubelet::PreparedDevice device{{result.base_request}, result.pool, std::string(imex::kChannelDevice), {},
                                 std::nullopt};
  DomainPrepare c{claim, plan->domain_id, started_entry(claim, claims::encode_claim_status(plan->recorded)), {}, {},
                  {}, {}};
  c.edits.push_back({std::string(imex::kChannelDevice),
                     cdi::imex_channel_edits(cdi::ImexChannel{imex::kChannelId, options_.channel_major})});
  c.encode = [device, request = result.request, domain = plan->domain_id](const std::vector<std::string>& ids) {
    auto d = device;
    d.cdi_device_ids = ids;
    return encode_groups(d, request, domain);
  };
  auto hooks = book_.hooks();
  hooks.rollback = [this](DomainPrepare& p) { return forget(p.claim); };
  hooks.on_rollback_failed = [this](DomainPrepare& p, const Error& undo) {
    // The apply's error is the one kubelet gets; what the rollback left is told on its own.
    claims::report_failed_rollback(claims::kComputeDomainDriverName, p.claim, undo, options_.on_rollback_failed);
  };
  auto answer = co_await book_.run(steps_, c, hooks, std::move(device));
  if (answer)
    nvdra::logger("compute-domain")
        ->info("claim={} prepared device=channel-0 domain={} cdi={}", claim.describe(), c.domain_id,
               c.ids.empty() ? "" : c.ids[0]);
  co_return answer;
}

boost::asio::awaitable<Status> ComputeDomainClaimHandler::admit(const HostManagedPlan& plan,
                                                                const kubelet::ClaimRef& claim) {
  // Step 5: one completed channel claim per node.
  for (const auto& [uid, entry] : committer_.current().claims)
    if (uid != claim.uid && entry.state == ClaimState::kPrepareCompleted && holds_channel(entry))
      co_return with_claim(
          imex::channel_conflict_error(entry.ns.empty() ? uid : entry.ns + "/" + entry.name + " (" + uid + ")"), claim);
  // Step 6: the ComputeDomain exists in the claim's namespace.
  if (auto st = co_await find_domain(plan.domain_id, claim); !st) co_return st;
  // Step 7: an NVLink clique on this node.
  if (options_.clique_id.empty() && !options_.clique_problem.empty())
    co_return with_claim(make_error(ErrorCode::kFailedPrecondition,
                                    "host-managed IMEX requires an NVLink clique on this node, and NVML could not "
                                    "tell it: " + options_.clique_problem),
                         claim);
  if (auto st = imex::check_clique(options_.clique_id); !st) co_return with_claim(st.error(), claim);
  // nvdra's addition: --imex-check=enforce keeps new claims off a host whose IMEX unit is down.
  if (gate_)
    if (auto st = gate_(); !st) co_return with_claim(st.error(), claim);
  co_return Status{};
}

boost::asio::awaitable<Status> ComputeDomainClaimHandler::find_domain(const std::string& uid,
                                                                      const kubelet::ClaimRef& claim) {
  // Only the UID is in the opaque config: list the claim's namespace, then (for a precise message)
  // every namespace.
  auto search = [this, &uid](std::string ns) -> boost::asio::awaitable<Result<std::optional<std::string>>> {
    auto listed = co_await api_->list(k8s::kComputeDomainsV1beta1, std::move(ns), k8s::ListOptions{});
    if (!listed) {
      auto e = listed.error().to_error();
      if (e.code != ErrorCode::kNotFound) e.code = ErrorCode::kUnavailable;
      e.message = "cannot list ComputeDomains: " + e.message;
      co_return e;
    }
    simdjson::ondemand::parser parser;
    for (const auto& item : listed->items) {
      simdjson::padded_string padded(item);
      auto doc = parser.iterate(padded);
      simdjson::ondemand::object meta;
      std::string_view found, found_ns;
      if (doc["metadata"].get(meta) || meta["uid"].get(found) || found != uid) continue;
      if (meta["namespace"].get(found_ns)) found_ns = {};
      co_return std::optional<std::string>(std::string(found_ns));
    }
    co_return std::optional<std::string>();
  };
  auto here = co_await search(claim.namespace_name);
  if (!here) co_return with_claim(here.error(), claim);
  if (*here) co_return Status{};
  auto anywhere = co_await search("");
  if (anywhere && *anywhere)
    co_return with_claim(make_error(ErrorCode::kFailedPrecondition,
                                   "the ResourceClaim's namespace is different than the ComputeDomain's namespace: "
                                   "ComputeDomain " + uid + " is in namespace \"" + **anywhere + "\", the claim in \"" +
                                       claim.namespace_name + "\"" + imex::kPermanent),
                        claim);
  Error e = make_error(ErrorCode::kNotFound, "ComputeDomain not found: " + uid + " (no ComputeDomain with this UID in "
                                             "namespace \"" + claim.namespace_name + "\")" + imex::kPermanent);
  e.field = "domainID";
  co_return with_claim(std::move(e), claim);
}

boost::asio::awaitable<Status> ComputeDomainClaimHandler::forget(const kubelet::ClaimRef& claim) {
  co_return co_await book_.forget(claim);
}

boost::asio::awaitable<Status> ComputeDomainClaimHandler::unprepare(kubelet::ClaimRef claim) {
  // Checkpoint-driven cleanup only (seed §7.3): CDI spec, then the entry. No node label, no IMEX.
  auto st = co_await forget(claim);
  if (st) nvdra::logger("compute-domain")->info("claim={} unprepared", claim.describe());
  co_return st;
}

boost::asio::awaitable<std::vector<Error>> ComputeDomainClaimHandler::recover() {
  co_return co_await book_.recover(
      [this](kubelet::ClaimRef claim) -> boost::asio::awaitable<Status> { co_return co_await forget(claim); });
}

}  // namespace nvdra::drivers
