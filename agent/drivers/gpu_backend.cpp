#include "agent/drivers/gpu_backend.hpp"
#include "agent/drivers/gone_claim_sweep.hpp"
#include "agent/drivers/gpu_backend_parts.hpp"
#include "agent/drivers/until_ready.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <filesystem>
#include <span>

#include "agent/base/log.hpp"
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/claims/checkpoint/checkpoint_startup.hpp"
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/claim/gpu_inventory.hpp"
#include "agent/claims/sharing/helper_program_mps.hpp"
#include "agent/claims/sharing/mps_manager.hpp"
#include "agent/claims/vfio/pci_binder.hpp"
#include "agent/claims/sharing/time_slicing.hpp"
#include "agent/claims/vfio/vfio_step.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/api_claim_source.hpp"
#include "agent/drivers/checkpoint_rebuild.hpp"
#include "agent/drivers/device_health_monitor.hpp"
#include "agent/drivers/driver_checkpoint.hpp"
#include "agent/drivers/event_reporting.hpp"
#include "agent/drivers/node_fabric.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/status/agent_status.hpp"
#include "cdi/driver_discovery.hpp"
#include "cdi/driver_edits.hpp"
#include "cdi/file_spec_store.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"
#include "cdi/spec_store.hpp"
#include "nvml/discovery.hpp"
#include "nvml/partitions.hpp"
#include "nvml/consumable_shares.hpp"
#include "nvml/pci_gpus.hpp"
#include "nvml/published_devices.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::drivers {
namespace fs = std::filesystem;


namespace {

const char* describe(claims::BootCheck check) {
  switch (check) {
    case claims::BootCheck::kCreated: return "created";
    case claims::BootCheck::kSameBoot: return "same boot";
    case claims::BootCheck::kAdoptedBootId: return "adopted boot id";
    case claims::BootCheck::kNewBoot: return "new boot: prepared claims forgotten";
  }
  return "?";
}

// --mps-manager; auto looks at the host (a stat or two: on the worker pool).
claims::MpsManagerChoice choose_mps_manager(config::MpsManager wanted) {
  switch (wanted) {
    case config::MpsManager::kSystemd: return {claims::MpsManagerKind::kSystemd, "--mps-manager=systemd"};
    case config::MpsManager::kProcess: return {claims::MpsManagerKind::kProcess, "--mps-manager=process"};
    case config::MpsManager::kAuto: break;
  }
  return claims::auto_mps_manager(claims::probe_host());
}

// Whether a checkpointed claim was answered with the node-wide id of older nvdra versions: its
// containers still need that spec, so it stays until no such claim is left.
bool uses_legacy_base(const claims::Checkpoint& checkpoint) {
  for (const auto& [uid, entry] : checkpoint.claims)
    if (boost::json::serialize(entry.prepared_devices).find(cdi::kLegacyGpuBaseDeviceId) != std::string::npos)
      return true;
  return false;
}

// The blocking half of start(), on the worker pool: driver files, the claim specs' common edits,
// the MPS manager.
Status open_parts(GpuBackend::Parts& p, const config::Options& o) {
  const auto mps = choose_mps_manager(o.mps_manager);
  p.mps = claims::make_mps_control(mps.kind, o.nvidia_driver_root);
  p.mps_why = std::string(claims::to_string(mps.kind)) + " (" + mps.why + ")";

  auto specs = cdi::FileSpecStore::open(o.cdi_root);
  if (!specs) return specs.error();
  p.specs = std::move(*specs);
  if (!p.gpus->library) return {};  // no driver (passthrough only): VFIO claims need none of its files
  const auto roots = driver_roots(o, p.gpus->model);
  if (roots.hook_path.empty()) {
    p.hook_problem = std::string("no nvidia-cdi-hook found (looked for ") + cdi::kHostCdiHookPaths[0] + ", " +
                     cdi::kHostCdiHookPaths[1] + " on the host and " + cdi::kDriverRootCdiHookPath +
                     " in the driver root): CDI specs go without the create-symlinks, enable-cuda-compat and "
                     "update-ldcache hooks; install the NVIDIA Container Toolkit or set --nvidia-cdi-hook-path";
  }
  auto inventory = p.gpus->driver_files(roots);
  if (!inventory) return inventory.error();
  p.host = cdi::host_view(**inventory, roots);
  p.common_edits = cdi::driver_edits(**inventory, roots);
  // Upstream's claim specs say so at spec level: the legacy NVIDIA runtime hook then hands an image
  // that sets NVIDIA_VISIBLE_DEVICES=all no GPU beyond the claim's.
  p.common_edits.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
  if (!uses_legacy_base(p.startup.checkpoint)) {
    const auto legacy = cdi::SpecChange::remove(cdi::legacy_gpu_base_spec_file());
    if (p.specs->read(legacy.file_name))
      logger(config::kGpuDriverName)->info("cdi spec={} of an older nvdra (id {}) is used by no claim: removed",
                                           legacy.file_name, cdi::kLegacyGpuBaseDeviceId);
    if (auto st = p.specs->apply(std::span<const cdi::SpecChange>(&legacy, 1)); !st) return st;
  }
  return {};
}

}  // namespace

GpuBackend::GpuBackend(RunContext& ctx) : ctx_(ctx) {}
GpuBackend::~GpuBackend() = default;

// The driver's start as its phases: GPUs, node state (CDI, checkpoint, MPS), the claim handler with
// its FM partitions, lost claims rebuilt, recovery, device health; nothing is kept unless all succeed.
boost::asio::awaitable<Status> GpuBackend::start(std::shared_ptr<k8s::ApiServer> api) {
  const std::string data_dir = (fs::path(ctx_.options.kubelet_plugins_dir) / config::kGpuDriverName).string();
  auto parts = std::make_unique<Parts>();
  auto& p = *parts;
  if (auto st = co_await open_gpus(p); !st) co_return st;
  auto rebuild = co_await open_state(p, data_dir);
  if (!rebuild) co_return rebuild.error();
  if (auto st = co_await open_handler(p, api, data_dir); !st) co_return st;
  if (*rebuild) co_await rebuild_claims(p, api.get());
  report_recovery(co_await p.handler->recover());
  // Without an API server nothing can say a claim is gone: every completed claim stays.
  if (api) p.unverified = gone_claim_candidates(p.committer->current());
  watch_health(p);
  parts_ = std::move(parts);
  publish_fabric_status();
  if (parts_->fm_retry) parts_->fabric->keep_connecting(std::move(parts_->fm_retry), [this] { return fabric_connected(); });
  co_return Status{};
}

// NVML's GPUs (awaited while the driver is not installed, unless PassthroughSupport offers VFIO
// devices without it) and the inventory claims are checked against.
boost::asio::awaitable<Status> GpuBackend::open_gpus(Parts& p) {
  const auto& o = ctx_.options;
  const bool passthrough = o.gates.enabled(config::gate::kPassthroughSupport);
  // Without PassthroughSupport a node whose NVIDIA driver is not installed yet waits for it here, before
  // kubelet is served or a slice published (issue #30): no empty slice, no restart loop.
  auto gpus = co_await (passthrough ? ctx_.gpus.get() : ctx_.gpus.get_or_wait());
  if (!gpus && !passthrough) co_return gpus.error();
  if (gpus) {
    p.gpus = std::move(*gpus);
  } else {
    // A passthrough host may run no NVIDIA driver at all: its GPUs are still offered, as VFIO devices.
    nvdra::logger(config::kGpuDriverName)
        ->warn("driver={} NVML unavailable ({}); PassthroughSupport is on: publishing VFIO devices only, "
               "GPUs stay on vfio-pci after unprepare",
               config::kGpuDriverName, gpus.error().describe());
    p.gpus = std::make_shared<DiscoveredGpus>();
  }
  p.model = p.gpus->model;
  p.inventory = claims::GpuInventory(p.model, o.gates.enabled(config::gate::kDynamicMIG));
  if (passthrough)
    if (auto st = co_await ctx_.workers.run([&p, &o] { return open_passthrough(p, o); }); !st) co_return st;
  co_return Status{};
}

// The checkpoint, the CDI edits and spec store, the MPS manager. True: the claims' records may be
// lost (a bad checkpoint went aside, or none was found) and are rebuilt from their CDI specs.
boost::asio::awaitable<Result<bool>> GpuBackend::open_state(Parts& p, const std::string& data_dir) {
  auto log = nvdra::logger(config::kGpuDriverName);
  const auto& o = ctx_.options;
  auto checkpoint = co_await open_driver_checkpoint(ctx_, config::kGpuDriverName, data_dir, events_);
  if (!checkpoint) co_return checkpoint.error();
  p.store = std::move(checkpoint->store);
  p.startup = std::move(checkpoint->startup);
  // Also with no checkpoint at all: a kill between moving a bad one aside and saving the rebuilt one
  // leaves none, and claim specs on a node without a checkpoint are claims whose record was lost.
  const bool rebuild = !checkpoint->moved_aside.empty() || p.startup.check == claims::BootCheck::kCreated;
  auto opened = co_await ctx_.workers.run([&p, &o] { return open_parts(p, o); });
  if (!opened) co_return opened.error();
  if (!p.hook_problem.empty()) {
    log->warn("{}", p.hook_problem);
    ctx_.status.record_error(config::kGpuDriverName, p.hook_problem);
  }
  log->info("driver={} gpus={} checkpoint={} claims={} ({})", config::kGpuDriverName, p.gpus->model.gpus.size(),
            p.store->location(), p.startup.checkpoint.claims.size(), describe(p.startup.check));
  log->info("mps manager={}", p.mps_why);
  co_return rebuild;
}

// The committer, the claim source and the GpuClaimHandler with its options (FM partitions probed
// and connected here; PassthroughSupport's VFIO wiring).
boost::asio::awaitable<Status> GpuBackend::open_handler(Parts& p, const std::shared_ptr<k8s::ApiServer>& api,
                                                        const std::string& data_dir) {
  const auto& o = ctx_.options;
  p.committer = std::make_unique<claims::CheckpointCommitter>(ctx_.executor, ctx_.workers, *p.store,
                                                              std::move(p.startup.checkpoint));  // its last use
  p.source = std::make_unique<ApiClaimSource>(api, config::kGpuDriverName);
  claims::GpuClaimHandlerOptions ho = handler_options(p, data_dir);
  const claims::FabricGates fabric_gates{o.gates.enabled(config::gate::kFabricManagerPartitioning),
                                         o.gates.enabled(config::gate::kFabricTopologySupport)};
  if (fabric_gates.any()) {
    auto probe = co_await ctx_.workers.run([&o, &model = p.gpus->model] { return probe_fabric(o, model); });
    p.fabric = std::make_unique<claims::FabricPartitions>(ctx_.executor, std::move(probe.session), fabric_gates,
                                                          ctx_.metrics);
    p.fabric->on_change([this] { publish_fabric_status(); });
    p.fm_retry = co_await connect_at_start(*p.fabric, std::move(probe.load), ctx_.status);
    ho.fabric = p.fabric.get();
  }
  if (o.gates.enabled(config::gate::kPassthroughSupport)) wire_passthrough(p, ho, o);
  p.handler = std::make_unique<claims::GpuClaimHandler>(ctx_.workers, *p.source, p.inventory, *p.committer, *p.specs,
                                                        *p.mps, ho);
  co_return Status{};
}

claims::GpuClaimHandlerOptions GpuBackend::handler_options(const Parts& p, const std::string& data_dir) {
  const auto& o = ctx_.options;
  claims::GpuClaimHandlerOptions ho;
  ho.node_name = o.node_name;
  ho.driver_root = o.nvidia_driver_root;
  ho.mps_root = (fs::path(data_dir) / "mps").string();
  ho.host = p.host;
  ho.common_edits = p.common_edits;
  // DynamicMIG creates and destroys MIG devices through the one NVML session the backend keeps.
  ho.mig_library = p.gpus->library.get();
  ho.metrics = &ctx_.metrics;
  ho.consumable_shares = o.consumable_shares != "disabled";
  ho.gates.time_slicing_settings = o.gates.enabled("TimeSlicingSettings");
  ho.gates.mps_support = o.gates.enabled("MPSSupport");
  ho.gates.passthrough_support = o.gates.enabled("PassthroughSupport");
  ho.gates.fabric_topology_support = o.gates.enabled("FabricTopologySupport");
  ho.on_rollback_failed = rollback_reporter(events_, [m = &ctx_.metrics] { m->rollback_failed(config::kGpuDriverName); });
  ho.on_spec_rewritten = [this, node = o.node_name](const kubelet::ClaimRef&, const std::string& note) {
    warn_about_node(events_, node, kReasonCdiSpecRewritten, kActionRecoverCdiSpecs,
                    "driver " + std::string(config::kGpuDriverName) + ": " + note);
  };
  return ho;
}

// A bad checkpoint went aside (or none was found): the claims whose CDI specs are here become
// prepared again before recover() would take those specs for orphans.
boost::asio::awaitable<void> GpuBackend::rebuild_claims(Parts& p, k8s::ApiServer* api) {
  auto log = nvdra::logger(config::kGpuDriverName);
  auto rebuilt = co_await rebuild_gpu_claims(ctx_.workers, api, *p.specs, *p.handler);
  for (const auto& c : rebuilt.adopted) log->warn("claim {} rebuilt from its CDI spec and the API", c);
  for (const auto& e : rebuilt.errors) {
    log->warn("checkpoint rebuild: {}", e.describe());
    // A claim gone from the API is settled (its spec goes as an orphan); the rest needs a look.
    if (e.code != ErrorCode::kNotFound)
      ctx_.status.record_error(config::kGpuDriverName, "checkpoint rebuild: " + e.describe());
  }
}

// The claims deleted while the agent was down, unprepared once it is ready (gone_claim_sweep.hpp);
// then, as every backend's run(), until cancelled.
boost::asio::awaitable<void> GpuBackend::run() {
  auto candidates = std::move(parts_->unverified);
  if (!candidates.empty() && unprepare_) {
    co_await until_ready(ctx_.readiness, ctx_.executor, kAfterReadyAtMost);
    const GoneClaimSweep with{
        [this](const kubelet::ClaimRef& c) {
          const auto it = parts_->committer->current().claims.find(c.uid);
          return it != parts_->committer->current().claims.end() &&
                 it->second.state == claims::ClaimState::kPrepareCompleted;
        },
        [source = parts_->source.get()](kubelet::ClaimRef c) { return claims::claim_exists(*source, std::move(c)); },
        unprepare_};
    const auto began = std::chrono::steady_clock::now();
    const auto report = co_await sweep_gone_claims(std::move(candidates), with);
    report_gone_claims(report, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began));
  }
  co_await DriverBackend::run();
}

void GpuBackend::watch_health(Parts& p) {
  const auto& o = ctx_.options;
  if (!o.gates.enabled(config::gate::kNVMLDeviceHealthCheck)) return;
  const auto devices = nvml::published_gpu_resources(p.gpus->model, o.gates.enabled(config::gate::kDynamicMIG)).devices;
  p.health = std::make_unique<DeviceHealthMonitor>(
      ctx_.executor, ctx_.workers, *p.gpus->library, p.gpus->model,
      DeviceHealth(o.node_name, health_targets(devices, p.gpus->model),
                   XidPolicy::upstream(o.additional_xids_to_ignore, o.device_health_recovery)),
      ctx_.metrics);
}

kubelet::ClaimHandler& GpuBackend::claims() { return *parts_->handler; }

kubelet::HealthSource* GpuBackend::health() { return parts_ ? parts_->health.get() : nullptr; }

boost::asio::awaitable<void> GpuBackend::run_health() { co_await parts_->health->run(); }

void GpuBackend::fill_health(std::vector<systemd_bus::DeviceStatus>& rows) const {
  if (!parts_ || !parts_->health) return;
  for (auto& r : rows) parts_->health->fill(r);
}

boost::asio::awaitable<Result<DriverResources>> GpuBackend::resources() { co_return current_resources(); }

DriverResources GpuBackend::current_resources() const {
  const auto& p = *parts_;
  auto out = nvml::published_gpu_resources(p.model, ctx_.options.gates.enabled(config::gate::kDynamicMIG));
  if (p.health)  // NVMLDeviceHealthCheck: the devices' taints (PassthroughSupport excludes it: no VFIO twin here)
    for (auto& d : out.devices) d.taints = p.health->taints(d.name);
  // The loader checked the value; "disabled" when the gate is off.
  auto shares = nvml::parse_consumable_shares(ctx_.options.consumable_shares);
  nvml::apply_device_options(out, shares ? *shares : nvml::ConsumableShares{},
                             ctx_.options.gates.enabled(config::gate::kDRAListTypeAttributes));
  if (!p.binder) {
    if (p.fabric) add_fabric_attributes(out, p.fabric->session(), p.model);
    return out;
  }
  // VFIO devices after the options: upstream never shares them.
  const bool lists = ctx_.options.gates.enabled(config::gate::kDRAListTypeAttributes);
  for (std::size_t i = 0; i < p.pci.size(); ++i)
    if (p.inventory.find(nvml::vfio_device_name(static_cast<unsigned>(i))))
      out.devices.push_back(published_vfio(p, i, lists));
  // After the VFIO twins exist: they carry their parent GPU's gpuModuleID / partitionN (upstream §2.3).
  if (p.fabric) add_fabric_attributes(out, p.fabric->session(), p.model);
  // While one face of a GPU is prepared, the other is not offered (upstream §2.3).
  const auto withdrawn = claims::withdrawn_twins(p.committer->current(), p.inventory);
  std::erase_if(out.devices, [&](const PublishedDevice& d) {
    return std::find(withdrawn.begin(), withdrawn.end(), d.name) != withdrawn.end();
  });
  return out;
}

// FM came up after start: checkpointed claims hold their partitions again (FM may have lost them),
// the slices get the partition attributes, the status its endpoint.
boost::asio::awaitable<void> GpuBackend::fabric_connected() {
  if (!parts_) co_return;
  claims::RecoveryReport report;
  co_await parts_->handler->adopt_fabric(report);
  auto st = co_await parts_->fabric->reconcile();
  auto log = nvdra::logger(config::kGpuDriverName);
  for (const auto& e : report.errors) log->warn("fabric manager connected: {}", e.describe());
  if (!st) log->warn("fabric manager connected, re-activating held partitions failed: {}", st.error().describe());
  publish_fabric_status();
  if (resources_changed_) resources_changed_(current_resources());
}

void GpuBackend::publish_fabric_status() {
  if (!parts_ || !parts_->fabric) return;
  systemd_bus::FabricStatus f;
  const auto& session = parts_->fabric->session();
  f.manager = session.manager ? session.manager->endpoint() : "unavailable: " + session.unavailable;
  for (const auto& a : parts_->fabric->active()) {
    systemd_bus::FabricPartitionStatus p{a.id, {}, a.claims};
    for (unsigned m : a.modules) p.modules.push_back(std::to_string(m));
    f.partitions.push_back(std::move(p));
  }
  ctx_.status.set_fabric(std::move(f));
}

std::string GpuBackend::notice() const { return parts_ ? parts_->hook_problem : std::string(); }

const claims::Checkpoint* GpuBackend::checkpoint() const {
  return parts_ ? &parts_->committer->current() : nullptr;
}

}  // namespace nvdra::drivers
