#include "agent/drivers/driver_managed_start.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>

#include <filesystem>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/api_connection.hpp"
#include "agent/drivers/clique_refresh.hpp"
#include "agent/drivers/domain_cache.hpp"
#include "agent/drivers/domain_cleanup.hpp"
#include "agent/drivers/driver_managed_claims.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "agent/drivers/node_labels.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/status/agent_status.hpp"
#include "cdi/device_edits.hpp"
#include "cdi/driver_discovery.hpp"
#include "cdi/driver_edits.hpp"
#include "cdi/file_spec_store.hpp"
#include "cdi/naming.hpp"
#include "imex/channel_major.hpp"
#include "imex/driver_managed.hpp"
#include "nvml/discovery.hpp"

namespace nvdra::drivers {

DriverManagedParts::DriverManagedParts() = default;
DriverManagedParts::~DriverManagedParts() {
  if (cache) cache->stop();
  stop->emit(boost::asio::cancellation_type::terminal);
  // Upstream removes its clique label at shutdown; the patch goes out while the agent drains.
  if (clique_label && labels)
    boost::asio::co_spawn(executor, [l = labels]() -> boost::asio::awaitable<void> {
      (void)co_await l->write(std::string(imex::kCliqueLabel), std::nullopt);
    }, boost::asio::detached);
}

namespace {

// The node-wide spec daemon claims name as .../device=all: upstream's nvcdi "management" spec, every
// device node of the driver's /dev with the management common edits and NVIDIA_VISIBLE_DEVICES=void,
// equal to upstream's (upstream_driver_managed_parity_test). Blocking.
Status write_base_spec(const config::Options& o, DiscoveredGpus& gpus, cdi::FileSpecStore& specs) {
  const auto roots = driver_roots(o, gpus.model);
  auto inventory = gpus.driver_files(roots);  // the GPU driver's, when it found them first
  if (!inventory) return inventory.error();
  auto all = cdi::management_nodes(**inventory, roots);
  auto common = cdi::management_edits(**inventory, roots);
  common.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
  auto spec = cdi::build_base_spec(cdi::kComputeDomainVendor, "all", std::move(all), std::move(common));
  if (!spec) return spec.error();
  auto written = specs.write_if_changed(*spec);
  if (!written) return written.error();
  return {};
}

// Upstream's start-up checks of this mode, and what the claims need from the host.
boost::asio::awaitable<Result<DriverManagedOptions>> node_facts(RunContext& ctx, cdi::FileSpecStore& specs) {
  const auto& o = ctx.options;
  DriverManagedOptions d;
  auto major = co_await ctx.workers.run([root = o.host_root] { return imex::read_channel_major(root); });
  if (!major) co_return major.error();
  d.channel_major = *major;
  auto gpus = co_await ctx.gpus.get();
  if (!gpus) co_return gpus.error();
  const auto& model = (*gpus)->model;
  if (o.gates.enabled(config::gate::kIMEXDaemonsWithDNSNames))
    if (auto st = imex::check_dns_names_driver(model.system.driver_version); !st) co_return st.error();
  auto clique = nvml::clique_id(model, o.gates.enabled(config::gate::kCrashOnNVLinkFabricErrors));
  // A fabric still registering is not an error (upstream #1264): served once CliqueRefresh sees it done.
  if (!clique) d.clique_pending = nvml::fabric_registering(model);
  if (!clique && d.clique_pending.empty()) co_return clique.error();  // upstream refuses other fabric errors too
  d.clique_id = clique ? *clique : std::string();
  if (!d.clique_id.empty()) {
    auto caps = co_await ctx.workers.run([root = o.host_root] { return read_fabric_caps(root); });
    if (!caps) co_return caps.error();
    d.caps_major = caps->major;
    d.fabric_mgmt = caps->fabric_mgmt;
  }
  auto written = co_await ctx.workers.run([&o, g = *gpus, &specs] { return write_base_spec(o, *g, specs); });
  if (!written) co_return written.error();
  d.plugin_dir = (std::filesystem::path(o.kubelet_plugins_dir) / config::kComputeDomainDriverName).string();
  d.pool = o.node_name;
  d.use_cliques = o.gates.enabled(config::gate::kComputeDomainCliques);
  d.gates = claims::ConfigGates{o.gates.enabled(config::gate::kTimeSlicingSettings),
                                o.gates.enabled(config::gate::kMPSSupport),
                                o.gates.enabled(config::gate::kPassthroughSupport),
                                o.gates.enabled(config::gate::kFabricTopologySupport)};
  co_return d;
}

}  // namespace

namespace {

// --gpu-clique-label-enabled: nvidia.com/gpu.clique=<the wanted clique>, retried until the API server takes
// it; a clique changed while a write is in flight is written next.
boost::asio::awaitable<void> keep_clique_label(std::shared_ptr<NodeLabels> labels,
                                               std::shared_ptr<DriverManagedParts::CliqueLabelWanted> wanted) {
  auto ex = co_await boost::asio::this_coro::executor;
  const std::string key(imex::kCliqueLabel);
  for (std::chrono::milliseconds pause{500};; pause = std::min(pause * 2, std::chrono::milliseconds(30000))) {
    if (co_await labels->load()) {
      const std::string target = wanted->value;
      if (labels->value(key) == target) {
        wanted->writing = false;
        co_return;
      }
      auto st = co_await labels->write(key, target);
      if (st) {
        nvdra::logger("compute-domain")->info("driver=compute-domain.nvidia.com node label {}={}", key, target);
        continue;  // look again: the clique may have changed while the patch was out
      }
      nvdra::logger("compute-domain")->warn("{}; retrying", st.error().describe());
    }
    boost::asio::steady_timer timer(ex, pause);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

// Why this mode cannot serve on this node ("" when it can), and the API client when it can.
boost::asio::awaitable<std::string> refusal_of(RunContext& ctx, const Result<DriverManagedOptions>& facts,
                                               std::shared_ptr<k8s::ApiServer>& api) {
  if (!facts) co_return facts.error().describe();
  if (!api_server_configured(ctx.options))
    co_return "driver-managed IMEX needs the Kubernetes API (ComputeDomains, ComputeDomainCliques, the Node's "
              "labels): set --kubeconfig or run in a cluster";
  auto connected = co_await connect_api_server(ctx);
  if (!connected) co_return connected.error().describe();
  api = std::move(*connected);
  co_return std::string();
}

}  // namespace

void label_clique(DriverManagedParts& parts, const config::Options& o, const std::string& clique) {
  if (!o.gpu_clique_label_enabled || clique.empty() || !parts.labels) return;
  parts.clique_label = true;
  parts.clique_wanted->value = clique;
  if (parts.clique_wanted->writing) return;  // the writer in flight writes the new value next
  parts.clique_wanted->writing = true;
  boost::asio::co_spawn(parts.executor, keep_clique_label(parts.labels, parts.clique_wanted),
                        boost::asio::bind_cancellation_slot(parts.stop->slot(),
                                                            [keep = parts.stop](std::exception_ptr) {}));
}

boost::asio::awaitable<Result<std::unique_ptr<DriverManagedParts>>> start_driver_managed(
    RunContext& ctx, std::shared_ptr<k8s::ApiServer> claim_reader, claims::CheckpointCommitter& committer,
    cdi::FileSpecStore& specs, k8s::EventRecorder* events) {
  auto log = nvdra::logger("compute-domain");
  const auto& o = ctx.options;
  auto facts = co_await node_facts(ctx, specs);
  std::shared_ptr<k8s::ApiServer> api;
  auto options = facts ? *facts : DriverManagedOptions{};
  options.refusal = co_await refusal_of(ctx, facts, api);
  auto parts = std::make_unique<DriverManagedParts>();
  parts->executor = ctx.executor;
  const auto clique = options.clique_id;
  if (options.refusal.empty()) {
    parts->labels = std::make_shared<NodeLabels>(api, o.node_name);
    parts->cache = std::make_shared<ComputeDomainCache>(ctx.executor, api, o.namespace_name, o.node_name, clique);
  } else {
    log->error("driver=compute-domain.nvidia.com mode=driverManaged refusing every claim and publishing no device: {}",
               options.refusal);
    ctx.status.record_error("compute-domain", options.refusal);
  }
  parts->handler = std::make_unique<DriverManagedClaimHandler>(ctx.workers, std::move(claim_reader), committer, specs,
                                                               parts->cache, parts->labels.get(), events,
                                                               std::move(options));
  if (parts->cache) {
    // Queued, not spawned: DomainCleanup::run does the work inside the driver's serving scope, and
    // ~DriverManagedParts stops the cache (dropping these callbacks) before `cleanup` goes.
    parts->cleanup = std::make_unique<DomainCleanup>(ctx.executor);
    parts->cache->on_gone([cleanup = parts->cleanup.get()](const std::string& uid) { cleanup->gone(uid); });
    parts->cache->on_synced([cleanup = parts->cleanup.get()] { cleanup->sweep(); });
    // The watches start in ComputeDomainBackend::run(), once the agent is ready (or after 5 s).
    label_clique(*parts, o, clique);
  }
  for (const auto& e : co_await parts->handler->recover())
    log->warn("driver=compute-domain.nvidia.com start-up cleanup: {}, ignoring", e.describe());
  if (!parts->handler->clique_pending().empty())
    ctx.status.record_error("compute-domain", "channels and daemons not offered yet: " +
                                                  parts->handler->clique_pending());
  if (!parts->handler->clique_pending().empty())
    log->warn("driver=compute-domain.nvidia.com channels and daemons are not offered yet: {}; re-reading the "
              "fabric state every {} s", parts->handler->clique_pending(), kCliquePendingPeriod.count());
  log->info("driver=compute-domain.nvidia.com mode=driverManaged clique={} cliques_gate={} clique_label={}",
            clique.empty() ? "none" : clique, o.gates.enabled(config::gate::kComputeDomainCliques),
            o.gpu_clique_label_enabled);
  co_return parts;
}

}  // namespace nvdra::drivers
