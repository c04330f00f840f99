#include "agent/drivers/compute_domain_backend.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <fmt/format.h>

#include <filesystem>

#include "agent/base/log.hpp"
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/claims/checkpoint/checkpoint_startup.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/api_connection.hpp"
#include "agent/drivers/clique_refresh.hpp"
#include "agent/drivers/domain_cache.hpp"
#include "agent/drivers/compute_domain_claims.hpp"
#include "agent/drivers/domain_cleanup.hpp"
#include "agent/drivers/driver_checkpoint.hpp"
#include "agent/drivers/driver_managed_claims.hpp"
#include "agent/drivers/driver_managed_start.hpp"
#include "agent/drivers/event_reporting.hpp"
#include "agent/drivers/imex_unit_watcher.hpp"
#include "agent/drivers/mode_change_cleanup.hpp"
#include "agent/drivers/node_labels.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "agent/drivers/until_ready.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/runtime/readiness.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/status/agent_status.hpp"
#include "cdi/file_spec_store.hpp"
#include "imex/channel_device.hpp"
#include "imex/channel_major.hpp"
#include "imex/unit_policy.hpp"
#include "nvml/discovery.hpp"

namespace nvdra::drivers {

namespace {

imex::CheckPolicy policy_of(config::ImexCheck check) {
  switch (check) {
    case config::ImexCheck::kWarn: return imex::CheckPolicy::kWarn;
    case config::ImexCheck::kEnforce: return imex::CheckPolicy::kEnforce;
    case config::ImexCheck::kOff: return imex::CheckPolicy::kOff;
  }
  return imex::CheckPolicy::kWarn;
}

struct Clique {
  std::string id;
  std::string problem;
};

}  // namespace

struct ComputeDomainBackend::Parts {
  std::unique_ptr<claims::FileCheckpointStore> checkpoints;
  std::unique_ptr<claims::CheckpointCommitter> committer;
  std::unique_ptr<cdi::FileSpecStore> specs;
  std::unique_ptr<ImexUnitWatcher> watcher;
  std::unique_ptr<ComputeDomainClaimHandler> handler;
  std::unique_ptr<DriverManagedParts> driver_managed;  // driver-managed mode (issue #29)
  std::unique_ptr<ModeChangeCleanup> mode_change;      // host-managed: labels of driver-managed claims
  bool host_managed = false;
};

ComputeDomainBackend::ComputeDomainBackend(RunContext& ctx) : ctx_(ctx) {}
ComputeDomainBackend::~ComputeDomainBackend() = default;

const ImexUnitWatcher* ComputeDomainBackend::watcher() const { return parts_ ? parts_->watcher.get() : nullptr; }

kubelet::ClaimHandler& ComputeDomainBackend::claims() {
  if (parts_->driver_managed) return *parts_->driver_managed->handler;
  if (parts_->mode_change) return *parts_->mode_change;
  return *parts_->handler;
}

const claims::Checkpoint* ComputeDomainBackend::checkpoint() const {
  return parts_ && parts_->committer ? &parts_->committer->current() : nullptr;
}

// start(), as phases: the mode and its options, the stores, then the mode's claim handler.
boost::asio::awaitable<Status> ComputeDomainBackend::start(std::shared_ptr<k8s::ApiServer> api) {
  const auto& o = ctx_.options;
  auto parts = std::make_unique<Parts>();
  parts->host_managed = o.gates.enabled(config::gate::kHostManagedIMEX);
  ctx_.status.set_imex({parts->host_managed ? "hostManaged" : "driverManaged", o.imex_unit, "", ""});
  ComputeDomainClaimOptions options = claim_options(parts->host_managed);
  if (parts->host_managed)
    if (auto st = co_await read_host_managed_facts(options); !st) co_return failed(st.error());
  if (auto st = co_await open_stores(*parts); !st) co_return failed(st.error());
  if (!parts->host_managed) {
    auto dm = co_await start_driver_managed(ctx_, std::move(api), *parts->committer, *parts->specs, events_);
    if (!dm) co_return failed(dm.error());
    parts->driver_managed = std::move(*dm);
  } else {
    co_await start_host_managed(*parts, std::move(api), std::move(options));
  }
  parts_ = std::move(parts);
  co_return Status{};
}

Error ComputeDomainBackend::failed(Error e) {
  ctx_.status.record_error("compute-domain", e.describe());
  return e;
}

ComputeDomainClaimOptions ComputeDomainBackend::claim_options(bool host_managed) {
  const auto& o = ctx_.options;
  ComputeDomainClaimOptions options;
  options.host_managed = host_managed;
  options.on_rollback_failed = rollback_reporter(events_, [m = &ctx_.metrics] { m->rollback_failed(config::kComputeDomainDriverName); });
  options.gates = claims::ConfigGates{o.gates.enabled(config::gate::kTimeSlicingSettings),
                                      o.gates.enabled(config::gate::kMPSSupport),
                                      o.gates.enabled(config::gate::kPassthroughSupport),
                                      o.gates.enabled(config::gate::kFabricTopologySupport)};
  return options;
}

// HostManagedIMEX: the IMEX channel major (missing: the driver does not start) and the node's NVLink
// clique (a problem there only fails channel claims).
boost::asio::awaitable<Status> ComputeDomainBackend::read_host_managed_facts(ComputeDomainClaimOptions& options) {
  auto log = nvdra::logger("compute-domain");
  const auto& o = ctx_.options;
  auto major = co_await ctx_.workers.run([root = o.host_root] { return imex::read_channel_major(root); });
  if (!major) co_return major.error();
  options.channel_major = *major;
  Clique clique;
  if (auto gpus = co_await ctx_.gpus.get(); !gpus) {
    clique.problem = gpus.error().describe();
  } else if (auto id = nvml::clique_id((*gpus)->model, o.gates.enabled(config::gate::kCrashOnNVLinkFabricErrors));
             !id) {
    clique.problem = id.error().describe();
  } else {
    clique.id = *id;
  }
  options.clique_id = clique.id;
  options.clique_problem = clique.problem;
  if (!clique.problem.empty())
    log->warn("driver=compute-domain.nvidia.com NVML cannot tell this node's NVLink clique: {}; channel claims "
              "will fail until it is (re-read every {} s)", clique.problem, kCliquePendingPeriod.count());
  else if (clique.id.empty())
    log->warn("driver=compute-domain.nvidia.com this node has no NVLink clique: channel claims will fail (seed: "
              "host-managed IMEX needs a multi-node NVLink clique)");
  log->info("driver=compute-domain.nvidia.com mode=hostManaged channel_major={} clique={} imex_unit={} "
            "imex_check={}", *major, clique.id.empty() ? "none" : clique.id, o.imex_unit,
            imex::to_string(policy_of(o.imex_check)));
  co_return Status{};
}

// The checkpoint in <kubelet-plugins-dir>/compute-domain.nvidia.com/, the CDI store, the committer.
boost::asio::awaitable<Status> ComputeDomainBackend::open_stores(Parts& parts) {
  const auto& o = ctx_.options;
  const std::string dir = (std::filesystem::path(o.kubelet_plugins_dir) / config::kComputeDomainDriverName).string();
  auto opened = co_await open_driver_checkpoint(ctx_, config::kComputeDomainDriverName, dir, events_);
  if (!opened) co_return opened.error();
  auto specs = co_await ctx_.workers.run([cdi_root = o.cdi_root] { return cdi::FileSpecStore::open(cdi_root); });
  if (!specs) co_return specs.error();
  parts.checkpoints = std::move(opened->store);
  parts.specs = std::move(*specs);
  parts.committer = std::make_unique<claims::CheckpointCommitter>(ctx_.executor, ctx_.workers, *parts.checkpoints,
                                                                  std::move(opened->startup.checkpoint));
  co_return Status{};
}

// HostManagedIMEX's claim handler behind the unit watcher's gate; claims a crash left half-prepared go,
// and with an API server, driver-managed claims left by a mode change are unprepared (their labels).
boost::asio::awaitable<void> ComputeDomainBackend::start_host_managed(Parts& parts, std::shared_ptr<k8s::ApiServer> api,
                                                                      ComputeDomainClaimOptions options) {
  const auto& o = ctx_.options;
  PrepareGate gate = follow_imex_unit(parts);
  parts.handler = std::make_unique<ComputeDomainClaimHandler>(ctx_.workers, std::move(api), *parts.committer,
                                                              *parts.specs, std::move(options), std::move(gate));
  for (const auto& e : co_await parts.handler->recover())
    nvdra::logger("compute-domain")->warn("driver=compute-domain.nvidia.com start-up cleanup: {}, ignoring",
                                          e.describe());
  if (api_server_configured(o))
    if (auto labels_api = co_await connect_api_server(ctx_))
      parts.mode_change = std::make_unique<ModeChangeCleanup>(
          *parts.handler, *parts.committer, std::make_shared<NodeLabels>(std::move(*labels_api), o.node_name));
}

// --imex-check warn|enforce: the IMEX unit watcher (status, metric, an Event under enforce); under
// enforce, the gate that refuses new channel claims while the unit is down. Empty gate otherwise.
PrepareGate ComputeDomainBackend::follow_imex_unit(Parts& parts) {
  const auto& o = ctx_.options;
  const auto policy = policy_of(o.imex_check);
  if (policy == imex::CheckPolicy::kOff) return {};
  parts.watcher = std::make_unique<ImexUnitWatcher>(ctx_.system_bus, o.imex_unit);
  auto* status = &ctx_.status;
  auto* metrics = &ctx_.metrics;
  // Under enforce a down unit refuses new channel claims: say so where operators look (an Event
  // regarding the node), once per transition from up (or unknown) to down.
  auto* events = policy == imex::CheckPolicy::kEnforce ? events_ : nullptr;
  parts.watcher->on_change([status, metrics, events, node = o.node_name,
                            was_down = false](const imex::UnitView& v) mutable {
    metrics->set_imex_unit(v.unit, v.reach == imex::Reach::kKnown ? v.state.active_state : "unknown");
    status->set_imex({"hostManaged", v.unit, v.state.active_state, v.state.sub_state});
    const bool down = v.reach == imex::Reach::kKnown && !imex::is_active(v.state);
    if (down) status->record_error("imex", "unit " + v.unit + " is not active: " + imex::describe(v.state));
    if (down && !was_down)
      warn_about_node(events, node, kReasonImexUnitDown, kActionCheckImexUnit,
                      "IMEX unit " + v.unit + " is not active (" + imex::describe(v.state) +
                          "); --imex-check=enforce refuses new IMEX channel claims on this node until it is");
    was_down = down;
  });
  metrics->set_imex_unit(o.imex_unit, "unknown");  // until systemd has answered
  parts.watcher->start(ctx_.executor);
  if (policy != imex::CheckPolicy::kEnforce) return {};
  return [w = parts.watcher.get()] { return imex::prepare_allowed(imex::CheckPolicy::kEnforce, w->view()); };
}

boost::asio::awaitable<Result<DriverResources>> ComputeDomainBackend::resources() {
  if (!parts_) co_return DriverResources{};
  if (parts_->host_managed) co_return imex::host_managed_resources();
  if (!parts_->driver_managed->handler->refusal().empty()) co_return DriverResources{};
  if (!parts_->driver_managed->handler->clique_pending().empty()) co_return DriverResources{};  // not yet
  co_return imex::driver_managed_resources();
}

// Driver-managed: the domain-directory cleanup and the clique re-read, both ended by cancellation
// before the backend goes (DriverBackend::run).
boost::asio::awaitable<void> ComputeDomainBackend::run() {
  using namespace boost::asio::experimental::awaitable_operators;
  if (parts_ && parts_->handler) {  // HostManagedIMEX
    auto* h = parts_->handler.get();
    co_await follow_clique(ctx_, false, [h] { return CliqueInUse{h->clique_id(), !h->clique_problem().empty()}; },
                           [h](const std::string& clique, FabricCaps) { h->set_clique(clique); });
    co_return;
  }
  if (!parts_ || !parts_->driver_managed || !parts_->driver_managed->cleanup) {
    co_await DriverBackend::run();
    co_return;
  }
  auto& dm = *parts_->driver_managed;
  auto* h = dm.handler.get();
  // At start the watches' LISTs and TLS handshakes (2 of the start's 6) would compete with the start
  // itself for CPU and the API server; a prepare that comes before they have listed waits for them.
  const bool ready = co_await until_ready(ctx_.readiness, ctx_.executor, kAfterReadyAtMost);
  nvdra::logger("compute-domain")
      ->info("driver=compute-domain.nvidia.com watching ComputeDomains and ComputeDomainCliques ({})",
             ready ? "the agent is ready" : fmt::format("not ready after {} s", kAfterReadyAtMost.count()));
  dm.cache->start();
  co_await (dm.cleanup->run(*h) ||
            follow_clique(ctx_, true, [h] { return CliqueInUse{h->clique_id(), !h->clique_pending().empty()}; },
                          [this, &dm, h](const std::string& clique, FabricCaps caps) {
                            h->set_clique(clique, caps.major, std::move(caps.fabric_mgmt));
                            if (dm.cache && !clique.empty()) dm.cache->select_clique(clique);
                            label_clique(dm, ctx_.options, clique);
                            if (resources_changed_) resources_changed_(imex::driver_managed_resources());
                          }));
}

std::unique_ptr<DriverBackend> make_compute_domain_backend(RunContext& ctx) {
  return std::make_unique<ComputeDomainBackend>(ctx);
}

}  // namespace nvdra::drivers
