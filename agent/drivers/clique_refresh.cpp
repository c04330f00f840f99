#include "agent/drivers/clique_refresh.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
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
Reread reread(DiscoveredGpus& gpus, bool strict, bool with_caps, const std::string& host_root) {
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
  if (out.id.empty() || !with_caps) return out;
  auto caps = read_fabric_caps(host_root);
  if (!caps) out.error = caps.error().describe();
  else out.caps = *caps;
  return out;
}

}  // namespace

boost::asio::awaitable<void> follow_clique(RunContext& ctx, bool with_caps, std::function<CliqueInUse()> current,
                                           std::function<void(const std::string& clique, FabricCaps caps)> apply) {
  auto log = nvdra::logger("compute-domain");
  const bool strict = ctx.options.gates.enabled(config::gate::kCrashOnNVLinkFabricErrors);
  boost::asio::steady_timer timer(ctx.executor);
  std::string last_error;  // logged once per distinct error, not at every period
  for (;;) {
    timer.expires_after(current().pending ? kCliquePendingPeriod : std::chrono::seconds(ctx.options.clique_reread_seconds));
    co_await timer.async_wait(boost::asio::use_awaitable);
    auto gpus = co_await ctx.gpus.get();
    Reread r;
    if (!gpus)
      r.error = gpus.error().describe();
    else
      r = co_await ctx.workers.run([g = *gpus, strict, with_caps, root = ctx.options.host_root] {
        return reread(*g, strict, with_caps, root);
      });
    if (!r.error.empty() && r.error != last_error)
      log->warn("driver=compute-domain.nvidia.com re-reading the NVLink clique: {}; keeping what is in use", r.error);
    last_error = r.error;
    const auto in_use = current();
    if (!r.error.empty() || !r.pending.empty() || (r.id == in_use.id && !in_use.pending)) continue;
    log->info("driver=compute-domain.nvidia.com NVLink clique now {} (was {}): claims prepared from now on use it",
              r.id.empty() ? "none" : r.id, in_use.id.empty() ? "none" : in_use.id);
    apply(r.id, std::move(r.caps));
  }
}

}  // namespace nvdra::drivers
