#include "agent/drivers/driver_checkpoint.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/event_reporting.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/status/agent_status.hpp"

namespace nvdra::drivers {

namespace {

// Blocking: flock, read, fsync. `replaced`: what to tell the operator about a file not used as is.
Result<DriverCheckpoint> open_once(const claims::FileCheckpointStoreOptions& options, std::string& replaced) {
  DriverCheckpoint out;
  auto store = claims::FileCheckpointStore::open(options);
  if (!store) return store.error();
  auto loaded = (*store)->load();
  if (!loaded) return loaded.error();
  auto boot_id = claims::read_boot_id();
  if (!boot_id) return boot_id.error();
  out.moved_aside = loaded->moved_aside;
  out.problem = loaded->problem;
  if (!out.moved_aside.empty())
    replaced = out.problem + "; moved aside to " + out.moved_aside + "; starting with an empty checkpoint";
  const std::size_t claims_before = loaded->checkpoint ? loaded->checkpoint->claims.size() : 0;
  const std::string old_boot = loaded->checkpoint ? loaded->checkpoint->node_boot_id : "";
  out.startup = claims::reconcile_boot_id(std::move(loaded->checkpoint), *boot_id);
  // A reboot forgets every claim (upstream's rule: nothing they made outlived it); those it held
  // stay readable in a copy.
  if (out.startup.check == claims::BootCheck::kNewBoot && claims_before > 0) {
    auto copy = (*store)->keep_copy("other-boot");
    if (!copy) return copy.error();
    replaced = "checkpoint " + (*store)->location() + " is of another boot (" + old_boot + ", now " + *boot_id +
               "): its " + std::to_string(claims_before) + " prepared claim(s) are forgotten, as upstream does; "
               "a copy is kept at " + *copy;
  }
  if (out.startup.needs_save)
    if (auto saved = (*store)->save(out.startup.checkpoint); !saved) return saved.error();
  out.store = std::move(*store);
  return out;
}

}  // namespace

boost::asio::awaitable<Result<DriverCheckpoint>> open_driver_checkpoint(RunContext& ctx, std::string driver,
                                                                        std::string dir, k8s::EventRecorder* events) {
  claims::FileCheckpointStoreOptions options{dir};
  options.metrics = &ctx.metrics;
  options.driver = driver;
  // Never a crash loop over a bad file (upstream's fate): keep it aside, start empty, rebuild.
  options.on_corrupt = claims::CorruptCheckpointPolicy::kStartEmpty;
  bool said = false;
  for (;;) {
    std::string replaced;
    auto opened = co_await ctx.workers.run([&options, &replaced] { return open_once(options, replaced); });
    if (opened && !replaced.empty()) {
      nvdra::logger(driver)->warn("driver={} {}", driver, replaced);
      warn_about_node(events, ctx.options.node_name, kReasonCheckpointReplaced, kActionLoadCheckpoint,
                      "driver " + driver + ": " + replaced);
    }
    if (opened) co_return opened;
    if (!claims::FileCheckpointStore::is_lock_held(opened.error())) {
      warn_about_node(events, ctx.options.node_name, kReasonCheckpointUnreadable, kActionLoadCheckpoint,
                      "driver " + driver + ": " + opened.error().describe());
      co_return opened;
    }
    if (!said) {
      said = true;
      nvdra::logger(driver)->warn("driver={} {}; waiting for it to exit", driver, opened.error().message);
      ctx.status.record_error(driver, opened.error().message + "; waiting for it to exit");
    }
    boost::asio::steady_timer retry(ctx.executor, std::chrono::milliseconds(250));
    co_await retry.async_wait(boost::asio::use_awaitable);
  }
}

}  // namespace nvdra::drivers
