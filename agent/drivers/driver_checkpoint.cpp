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

// Blocking: flock, read, fsync.
Result<DriverCheckpoint> open_once(const claims::FileCheckpointStoreOptions& options) {
  DriverCheckpoint out;
  auto store = claims::FileCheckpointStore::open(options);
  if (!store) return store.error();
  auto loaded = (*store)->load();
  if (!loaded) return loaded.error();
  auto boot_id = claims::read_boot_id();
  if (!boot_id) return boot_id.error();
  out.startup = claims::reconcile_boot_id(std::move(loaded->checkpoint), *boot_id);
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
  bool said = false;
  for (;;) {
    auto opened = co_await ctx.workers.run([&options] { return open_once(options); });
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
