#include "agent/drivers/device_health_monitor.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "agent/base/metrics_sink.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace asio = boost::asio;

namespace nvdra::drivers {
namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// After GPU_IS_LOST NVML answers every wait at once: look again this much later, not in a loop.
constexpr auto kLostRetry = std::chrono::milliseconds(200);

}  // namespace

DeviceHealthMonitor::DeviceHealthMonitor(asio::any_io_executor ex, runtime::WorkerPool& workers,
                                         nvml::GpuLibrary& library, const nvml::DeviceModel& model,
                                         DeviceHealth health, metrics::Sink& sink)
    : ex_(std::move(ex)), workers_(workers), library_(library), model_(model), health_(std::move(health)),
      sink_(sink) {}

kubelet::HealthSnapshot DeviceHealthMonitor::snapshot() const { return {generation_, health_.report()}; }

void DeviceHealthMonitor::changed() {
  ++generation_;
  for (auto* t : waiters_) t->cancel();
  count_devices();
}

void DeviceHealthMonitor::count_devices() {
  std::size_t healthy = 0, unhealthy = 0, unknown = 0;
  for (const auto& d : health_.report()) {
    if (d.health == kubelet::Health::kHealthy) ++healthy;
    else if (d.health == kubelet::Health::kUnhealthy) ++unhealthy;
    else ++unknown;
  }
  sink_.devices_by_health(healthy, unhealthy, unknown);
}

bool DeviceHealthMonitor::served(int64_t now) {
  const auto gpus = health_.served(now);
  for (const auto& g : gpus) recovered(g, "reset");
  return !gpus.empty();
}

asio::awaitable<kubelet::HealthSnapshot> DeviceHealthMonitor::watch(uint64_t after) {
  while (generation_ <= after) {
    asio::steady_timer timer(ex_, asio::steady_timer::time_point::max());
    waiters_.insert(&timer);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    waiters_.erase(&timer);
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
      throw boost::system::system_error(asio::error::operation_aborted);
  }
  co_return snapshot();
}

void DeviceHealthMonitor::log_event(const nvml::GpuEvent& e, std::optional<unsigned> action) const {
  std::string pci = "unknown";
  for (const auto& g : model_.gpus)
    if (g.uuid == e.gpu_uuid) pci = g.pci.bus_id;
  // One line per event: what an operator greps the journal for.
  logger("gpu.nvidia.com")
      ->warn("device health: gpu={} pci={} xid={} event_type={:#x} gi={} ci={} recovery_action={}", e.gpu_uuid, pci,
             e.data, e.type, static_cast<int>(e.gi_id), static_cast<int>(e.ci_id),
             action ? nvml::recovery_action_name(*action) : "unknown");
}

void DeviceHealthMonitor::count_event(const nvml::GpuEvent& e) {
  if (e.type == nvml::kEventXidCriticalError) sink_.gpu_xid(e.gpu_uuid, e.data);
  else if (e.type == nvml::kEventDoubleBitEcc) sink_.gpu_ecc(e.gpu_uuid, true);
  else if (e.type == nvml::kEventSingleBitEcc) sink_.gpu_ecc(e.gpu_uuid, false);
}

void DeviceHealthMonitor::recovered(const std::string& gpu_uuid, const char* reason) {
  logger("gpu.nvidia.com")->info("device health: gpu={} recovered ({}): its taints are removed", gpu_uuid, reason);
  sink_.health_recovered(gpu_uuid, reason);
}

asio::awaitable<std::optional<unsigned>> DeviceHealthMonitor::read_recovery_action(const std::string& gpu_uuid) {
  auto action = co_await workers_.run([this, gpu_uuid] { return library_.recovery_action(gpu_uuid); });
  if (!action) {
    logger("gpu.nvidia.com")->warn("device health: gpu={} recovery action unreadable: {}", gpu_uuid,
                                   action.error().describe());
    co_return std::nullopt;
  }
  co_return *action;
}

asio::awaitable<bool> DeviceHealthMonitor::follow_recovery(int64_t now) {
  bool changed = false;
  for (const auto& gpu : health_.awaiting_recovery()) {
    const auto action = co_await read_recovery_action(gpu);
    if (!action) continue;
    if (health_.recovery_action(gpu, *action, now)) {
      recovered(gpu, "recovery_action");
      changed = true;
    }
  }
  co_return changed;
}

// No NVML events at all: every device is unmonitored until the monitor stops.
asio::awaitable<void> DeviceHealthMonitor::unwatched(const std::vector<std::string>& uuids, const Error& why) {
  logger("gpu.nvidia.com")->warn("device health: no NVML events ({}): every device unmonitored", why.describe());
  const int64_t now = unix_now();
  bool any = false;
  for (const auto& u : uuids) any |= health_.unmonitored(u, now);
  if (any) changed();
  asio::steady_timer forever(ex_, asio::steady_timer::time_point::max());
  co_await forever.async_wait(asio::use_awaitable);
}

asio::awaitable<void> DeviceHealthMonitor::run() {
  auto log = logger("gpu.nvidia.com");
  std::vector<std::string> uuids;
  for (const auto& g : model_.gpus) uuids.push_back(g.uuid);
  auto watch = co_await workers_.run([&] { return library_.watch_events(uuids, kHealthEventMask); });
  if (!watch) co_return co_await unwatched(uuids, watch.error());
  const int64_t now = unix_now();
  bool any = false;
  std::shared_ptr<nvml::EventWatch> events(std::move(*watch));
  for (const auto& [uuid, why] : events->unmonitored()) {
    log->warn("device health: gpu={} unmonitored: {}", uuid, why.describe());
    any |= health_.unmonitored(uuid, now);
  }
  if (any) changed();
  else count_devices();
  log->info("device health: watching {} gpus for NVML events", uuids.size() - events->unmonitored().size());
  for (;;) {
    // The lambda holds the watch: if this coroutine is cancelled mid-wait, the wait ends within
    // kWaitSlice and the event set is freed on the pool thread.
    auto outcome = co_await workers_.run([events] { return events->wait(kWaitSlice); });
    co_await asio::this_coro::throw_if_cancelled();
    if (!outcome) {
      log->warn("device health: NVML event wait failed: {}", outcome.error().describe());
      asio::steady_timer pause(ex_, kLostRetry);
      co_await pause.async_wait(asio::use_awaitable);
      continue;
    }
    const int64_t t = unix_now();
    bool c = false;
    switch (outcome->kind) {
      case nvml::WaitOutcome::Kind::kGpuLost: {
        if (health_.lost(t)) {
          log->warn("device health: GPU_IS_LOST: every device tainted {}", kTaintGpuLost);
          sink_.gpu_lost();
          changed();
        }
        asio::steady_timer pause(ex_, kLostRetry);
        co_await pause.async_wait(asio::use_awaitable);
        continue;
      }
      case nvml::WaitOutcome::Kind::kEvent: {
        c = served(t);
        std::optional<unsigned> action;
        const auto& e = outcome->event;
        if (e.type == nvml::kEventXidCriticalError && health_.recovery() == config::HealthRecovery::kRecoveryAction)
          action = co_await read_recovery_action(e.gpu_uuid);
        log_event(e, action);
        count_event(e);
        c |= health_.event(e, t, action);
        break;
      }
      case nvml::WaitOutcome::Kind::kTimeout: c = served(t); break;
    }
    c |= co_await follow_recovery(t);
    if (c) changed();
  }
}

}  // namespace nvdra::drivers
