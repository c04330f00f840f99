#include "agent/drivers/driver_component.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <variant>

#include "agent/base/log.hpp"
#include "agent/drivers/api_connection.hpp"
#include "agent/drivers/backend_factory.hpp"
#include "agent/drivers/event_reporting.hpp"
#include "agent/drivers/heap_trimming_handler.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "agent/drivers/shared_server_facts.hpp"
#include "agent/kubelet/concurrently.hpp"
#include "agent/kubelet/failures.hpp"
#include "agent/runtime/readiness.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/status/agent_status.hpp"
#include "k8s/event_recorder.hpp"
#include "agent/kubelet/health_source.hpp"
#include "k8s/slice_publisher.hpp"

namespace nvdra::drivers {
namespace fs = std::filesystem;

namespace {

// Upstream creates the plugin data directory 0750; kubelet only needs to reach the socket in it.
void ensure_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0750) != 0)
    throw std::runtime_error("cannot set mode 0750 on " + dir.string() + ": " + std::strerror(errno));
}

}  // namespace

DriverComponent::DriverComponent(config::DriverKind kind, RunContext& ctx)
    : kind_(kind), ctx_(ctx), quiet_trim_(ctx.executor, ctx.workers) {
  const auto cfg = plugin_config();
  // Checked now so a path that cannot work stops start-up with one clear line, not a restart loop.
  (void)kubelet::socket_paths(cfg.driver_name, cfg.registrar_dir, cfg.plugin_data_dir, cfg.rolling_update_uid);
  // GPUs only: while the node has no NVIDIA driver yet, the status and the health check say so.
  // Start-up is over for it (READY=1): under systemd a start that waits for a driver to be installed
  // would time out and be restarted in a loop.
  if (kind_ == config::DriverKind::kGpu)
    ctx_.gpus.on_waiting_change([this] {
      if (!ctx_.gpus.waiting().empty()) {
        ctx_.readiness.satisfy(registered_condition(kind_));
        ctx_.readiness.satisfy(published_condition(kind_));
      }
      report("");
      registration_changed();
    });
}

DriverComponent::~DriverComponent() = default;

std::string DriverComponent::name() const { return config::driver_name(kind_); }

std::string DriverComponent::registered_condition(config::DriverKind kind) {
  return std::string(config::driver_name(kind)) + " registered";
}
std::string DriverComponent::published_condition(config::DriverKind kind) {
  return std::string(config::driver_name(kind)) + " published";
}

void DriverComponent::declare(runtime::Readiness& readiness) {
  readiness.expect(registered_condition(kind_));
  readiness.expect(published_condition(kind_));
}

kubelet::PluginServerConfig DriverComponent::plugin_config() const {
  kubelet::PluginServerConfig cfg;
  cfg.driver_name = name();
  cfg.registrar_dir = ctx_.options.kubelet_registrar_dir;
  cfg.plugin_data_dir = (fs::path(ctx_.options.kubelet_plugins_dir) / name()).string();
  cfg.rolling_update_uid = ctx_.options.rolling_update_uid;
  return cfg;
}

std::string DriverComponent::waiting() const {
  return kind_ == config::DriverKind::kGpu ? ctx_.gpus.waiting() : std::string();
}

kubelet::RegistrationStatus DriverComponent::registration() const {
  return plugin_ ? plugin_->registration() : kubelet::RegistrationStatus{};
}

kubelet::SocketPaths DriverComponent::sockets() const {
  const auto cfg = plugin_config();
  return kubelet::socket_paths(cfg.driver_name, cfg.registrar_dir, cfg.plugin_data_dir, cfg.rolling_update_uid);
}

void DriverComponent::registration_changed() {
  for (auto& fn : registration_listeners_) fn();
}

namespace {

const char* registration_text(kubelet::RegistrationState state) {
  switch (state) {
    case kubelet::RegistrationState::kRegistered: return systemd_bus::kRegistrationRegistered;
    case kubelet::RegistrationState::kRejected: return systemd_bus::kRegistrationFailed;
    case kubelet::RegistrationState::kWaiting: break;
  }
  return systemd_bus::kRegistrationPending;
}

}  // namespace

void DriverComponent::report(std::string detail) {
  if (detail.empty() && kind_ == config::DriverKind::kGpu) detail = ctx_.gpus.waiting();
  if (detail.empty() && backend_) detail = backend_->notice();
  ctx_.status.set_driver(systemd_bus::DriverStatus{name(), registration_text(registration().state), published_,
                                                   std::move(detail)});
}

boost::asio::awaitable<void> DriverComponent::serve() {
  auto log = nvdra::logger(name());
  std::shared_ptr<k8s::ApiServer> api, claim_reader;
  if (api_server_configured(ctx_.options)) {
    auto connected = co_await connect_api_server(ctx_);
    if (!connected) throw std::runtime_error("driver " + name() + ": Kubernetes API: " + connected.error().describe());
    api = std::move(*connected);
    auto reader = co_await connect_claim_reader(ctx_);
    if (!reader) throw std::runtime_error("driver " + name() + ": Kubernetes API: " + reader.error().describe());
    claim_reader = std::move(*reader);
  } else {
    log->warn("driver={} no --kubeconfig and not in a cluster: serving kubelet without publishing "
              "ResourceSlices or reading claims, ignoring", name());
  }
  if (!api) {
    co_await start_and_publish(std::move(claim_reader));
    co_return;
  }
  // The publisher starts now: its bootstrap (TLS handshake, /version, the Node, the served fields)
  // and its slice LIST/WATCH overlap the backend's start, and it writes nothing before set_desired().
  k8s::PublisherOptions publishing{name(), ctx_.options.node_name};
  publishing.facts = ctx_.server_facts.get(ctx_.executor, api);
  publishing.watch = ctx_.server_facts.slices(ctx_.executor, api);
  publisher_ = std::make_unique<k8s::SlicePublisher>(ctx_.executor, std::move(api), std::move(publishing));
  publisher_->on_converged([this] {
    quiet_trim_.request();  // what encoding, sending and comparing the slices allocated is free now
    ctx_.readiness.satisfy(published_condition(kind_));
    if (!published_) {
      published_ = true;
      report("");
    }
  });
  // Whichever ends first ends the other (awaitable_operators' || would wait for a success), and its
  // outcome is serve()'s: the other one's is the cancellation.
  namespace asio = boost::asio;
  auto [order, published, started] =
      co_await asio::experimental::make_parallel_group(
          asio::co_spawn(ctx_.executor, kubelet::detail::finish_quietly(publisher_->run()), asio::deferred),
          asio::co_spawn(ctx_.executor, kubelet::detail::finish_quietly(start_and_publish(std::move(claim_reader))),
                         asio::deferred))
          .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
  if (const auto first = order[0] == 0 ? published : started) std::rethrow_exception(first);
}

boost::asio::awaitable<void> DriverComponent::start_and_publish(std::shared_ptr<k8s::ApiServer> claim_reader) {
  auto log = nvdra::logger(name());
  const fs::path data_dir(plugin_config().plugin_data_dir);
  co_await ctx_.workers.run([data_dir] { ensure_private_dir(data_dir); });

  // The backend repairs what a crash left behind before kubelet can call in.
  backend_ = make_backend(kind_, ctx_);
  backend_->set_events(events_.get());
  if (auto started = co_await backend_->start(claim_reader); !started)
    throw std::runtime_error("driver " + name() + ": " + started.error().describe());
  claims_ = std::make_unique<StatusReportingHandler>(ctx_.executor, name(), backend_->claims(), ctx_.status,
                                                     [b = backend_.get()] { return b->checkpoint(); });
  claims_->refresh();
  metered_ = std::make_unique<MeteredClaimHandler>(name(), *claims_, ctx_.metrics,
                                                   [b = backend_.get()] { return b->checkpoint(); });
  metered_->refresh();
  kubelet::ClaimHandler* served = metered_.get();
  if (events_) {
    event_claims_ = std::make_unique<EventReportingHandler>(*metered_, *events_);
    served = event_claims_.get();
  }
  trimming_ = std::make_unique<HeapTrimmingHandler>(*served, quiet_trim_);
  served = trimming_.get();

  plugin_ = std::make_unique<kubelet::PluginServer>(ctx_.executor, plugin_config(), *served, backend_->health());
  backend_->set_unprepare([plugin = plugin_.get()](kubelet::ClaimRef claim) -> boost::asio::awaitable<std::string> {
    const std::string uid = claim.uid;
    auto results = co_await plugin->unprepare({std::move(claim)});
    co_return results[uid];
  });
  plugin_->on_registration([this](const kubelet::RegistrationStatus& status) {
    if (status.state == kubelet::RegistrationState::kRegistered) ctx_.readiness.satisfy(registered_condition(kind_));
    report(status.state == kubelet::RegistrationState::kRejected ? "kubelet rejected the registration: " + status.error
                                                                  : "");
    registration_changed();
  });
  co_await ctx_.workers.run([plugin = plugin_.get()] { plugin->start(); });
  log->info("driver={} data_dir={} started", name(), data_dir.string());
  co_await publish();
}

boost::asio::awaitable<void> DriverComponent::publish() {
  using namespace boost::asio::experimental::awaitable_operators;
  auto log = nvdra::logger(name());
  auto resources = co_await backend_->resources();
  if (!resources) throw std::runtime_error("driver " + name() + ": discovery: " + resources.error().describe());
  ctx_.status.set_devices(name(), health_rows(resources->devices));
  if (!publisher_) {
    ctx_.readiness.satisfy(published_condition(kind_));
  } else {
    log->info("driver={} devices={} publishing", name(), resources->devices.size());
    publisher_->set_desired(std::move(*resources));
    backend_->on_resources_changed([this](DriverResources changed) {
      if (!publisher_) return;
      ctx_.status.set_devices(name(), health_rows(changed.devices));
      publisher_->set_desired(std::move(changed));
    });
  }
  auto changed = co_await (serve_devices() || backend_->driver_changed());
  if (changed.index() == 1) {
    // Not a crash: the node's driver was upgraded or reloaded. NVML, discovery, CDI driver files and
    // slices come again from the new one; the checkpoint keeps the prepared claims.
    ctx_.gpus.forget();
    throw std::runtime_error("driver " + name() + ": " + std::get<1>(changed) + "; serving again with the new driver");
  }
}

boost::asio::awaitable<void> DriverComponent::serve_devices() {
  using namespace boost::asio::experimental::awaitable_operators;
  // backend_->run() ends (by cancellation) before publish() returns: the backend outlives its work.
  if (backend_->health()) {
    co_await (backend_->run_health() || follow_health() || backend_->run());
    co_return;
  }
  co_await backend_->run();
}

std::vector<systemd_bus::DeviceStatus> DriverComponent::health_rows(const std::vector<PublishedDevice>& devices) const {
  auto rows = device_rows(name(), devices);
  backend_->fill_health(rows);
  return rows;
}

// Health changes republish the devices (their taints) and refresh the status rows.
boost::asio::awaitable<void> DriverComponent::follow_health() {
  auto log = nvdra::logger(name());
  auto* health = backend_->health();
  uint64_t seen = health->snapshot().generation;
  for (;;) {
    seen = (co_await health->watch(seen)).generation;
    auto resources = co_await backend_->resources();
    if (!resources) {
      log->warn("driver={} device health changed but discovery failed: {}", name(), resources.error().describe());
      continue;
    }
    ctx_.status.set_devices(name(), health_rows(resources->devices));
    if (publisher_) publisher_->set_desired(std::move(*resources));
  }
}

boost::asio::awaitable<void> DriverComponent::serve_with_events() {
  namespace asio = boost::asio;
  // The recorder has its own client (its own QPS budget: Events never delay slices or claim reads)
  // and outlives a failed run. Without an API server there is nothing to report to.
  if (!events_ && api_server_configured(ctx_.options)) {
    if (auto api = co_await connect_api_server(ctx_)) {
      k8s::EventRecorderOptions eo;
      eo.reporting_controller = name();
      eo.reporting_instance = reporting_instance(name(), ctx_.options.node_name);
      events_ = std::make_unique<k8s::EventRecorder>(ctx_.executor, std::move(*api), std::move(eo));
    }
  }
  if (!events_) {
    co_await serve();
    co_return;
  }
  // Whichever ends first (serve() failing, or cancellation) ends the other.
  auto [order, served, drained] =
      co_await asio::experimental::make_parallel_group(
          asio::co_spawn(ctx_.executor, kubelet::detail::finish_quietly(serve()), asio::deferred),
          asio::co_spawn(ctx_.executor, kubelet::detail::finish_quietly(events_->run()), asio::deferred))
          .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
  (void)order;
  if (served) std::rethrow_exception(served);
  if (drained) std::rethrow_exception(drained);
}

boost::asio::awaitable<void> DriverComponent::run() {
  report("starting");
  // g++ 12 destroys temporaries of a co_await expression inside a try block twice, so the try
  // block holds nothing but one call.
  std::exception_ptr failure;
  try {
    co_await serve_with_events();
  } catch (...) {
    failure = std::current_exception();
  }
  // Cancelled (shutdown) or failed: either way stop serving and remove the sockets before returning.
  // Asked to stop is read from the state, not the exception: branches of `||` cancelled together end
  // it with asio::multiple_exceptions, not operation_aborted.
  const bool stop_requested =
      (co_await boost::asio::this_coro::cancellation_state).cancelled() != boost::asio::cancellation_type::none;
  // A cancelled coroutine throws at its next co_await; a fresh cancellation state lets stop() run.
  co_await boost::asio::this_coro::reset_cancellation_state();
  if (plugin_) co_await plugin_->stop();
  publisher_.reset();
  plugin_.reset();
  trimming_.reset();
  event_claims_.reset();
  metered_.reset();
  claims_.reset();
  backend_.reset();
  registration_changed();
  if (failure) {
    const bool cancelled = stop_requested || kubelet::is_cancellation(failure);
    if (!cancelled) report(kubelet::describe_failure(failure));
    // A failed start may have reported why (an unreadable checkpoint): one pass, no retries, and
    // never more than 2 s before the Supervisor's restart (the API server may be what failed). Not at
    // a stop: the Supervisor's grace period is shorter, and a full queue (1,000 Events) would outlast it.
    if (!cancelled && events_) {
      using namespace boost::asio::experimental::awaitable_operators;
      boost::asio::steady_timer limit(ctx_.executor, std::chrono::seconds(2));
      co_await (events_->flush() || limit.async_wait(boost::asio::use_awaitable));
    }
    std::rethrow_exception(failure);
  }
}

}  // namespace nvdra::drivers
