#include "agent/drivers/clique_refresh.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/driver_managed_claims.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "nvml/discovery.hpp"

namespace nvdra::drivers {

Result<FabricCaps> read_fabric_caps(const std::string& host_root) {
  auto major = cdi::read_char_device_major(host_root, cdi::kNvidiaCapsDevice);
  if (!major) return major.error();
  auto cap = cdi::read_cap(host_root, "fabric-imex-mgmt");
  if (!cap) return cap.error();
  return FabricCaps{*major, *cap};
}

namespace {

struct Reread {
  std::string id;
  std::string pending;  // a GPU still registering
  std::string error;    // anything else that went wrong
  FabricCaps caps;
};

// Blocking (worker pool): each GPU's fabric facts again, the clique from them and the caps it needs.
Reread reread(DiscoveredGpus& gpus, bool strict, const std::string& host_root) {
  Reread out;
  nvml::DeviceModel model = gpus.model;
  for (auto& g : model.gpus) {
    auto fabric = gpus.library->fabric(g.uuid);
    if (!fabric) {
      out.error = fabric.error().describe();
      return out;
    }
    g.fabric = *fabric;
  }
  auto id = nvml::clique_id(model, strict);
  if (!id) {
    out.pending = nvml::fabric_registering(model);
    if (out.pending.empty()) out.error = id.error().describe();
    return out;
  }
  out.id = *id;
  if (out.id.empty()) return out;
  auto caps = read_fabric_caps(host_root);
  if (!caps) out.error = caps.error().describe();
  else out.caps = *caps;
  return out;
}

}  // namespace

boost::asio::awaitable<void> follow_clique(RunContext& ctx, DriverManagedClaimHandler& handler,
                                           std::function<void(const std::string& clique)> on_changed) {
  auto log = nvdra::logger("compute-domain");
  const bool strict = ctx.options.gates.enabled(config::gate::kCrashOnNVLinkFabricErrors);
  boost::asio::steady_timer timer(ctx.executor);
  for (;;) {
    timer.expires_after(handler.clique_pending().empty() ? kCliquePeriod : kCliquePendingPeriod);
    co_await timer.async_wait(boost::asio::use_awaitable);
    auto gpus = co_await ctx.gpus.get();
    if (!gpus) {
      log->warn("driver=compute-domain.nvidia.com re-reading the NVLink clique: {}", gpus.error().describe());
      continue;
    }
    auto r = co_await ctx.workers.run(
        [g = *gpus, strict, root = ctx.options.host_root] { return reread(*g, strict, root); });
    if (!r.error.empty())
      log->warn("driver=compute-domain.nvidia.com re-reading the NVLink clique: {}; keeping what is in use", r.error);
    if (!r.error.empty() || !r.pending.empty()) continue;
    if (r.id == handler.clique_id() && handler.clique_pending().empty()) continue;
    log->info("driver=compute-domain.nvidia.com NVLink clique now {} (was {}): channels and daemons offered",
              r.id.empty() ? "none" : r.id, handler.clique_id().empty() ? "none" : handler.clique_id());
    handler.set_clique(r.id, r.caps.major, std::move(r.caps.fabric_mgmt));
    on_changed(r.id);
  }
}

}  // namespace nvdra::drivers
