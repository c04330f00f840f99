#include "agent/app.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "agent/base/log.hpp"
#include "agent/controller/compute_domain_controller.hpp"
#include "agent/drivers/client_config_cache.hpp"
#include "agent/drivers/driver_component.hpp"
#include "agent/drivers/node_gpus.hpp"
#include "agent/drivers/served_fields_file.hpp"
#include "agent/drivers/shared_server_facts.hpp"
#include "agent/drivers/until_ready.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/metrics/metrics_component.hpp"
#include "agent/health/health_component.hpp"
#include "agent/runtime/readiness.hpp"
#include "agent/runtime/stop_signals.hpp"
#include "agent/runtime/supervisor.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/status/agent_status.hpp"
#include "agent/systemd_bus/bus_connection.hpp"
#include "agent/systemd_bus/status_service.hpp"
#include "agent/systemd/notifier.hpp"
#include "agent/systemd/watchdog.hpp"

namespace asio = boost::asio;

namespace nvdra {

namespace config {
const char* driver_name(DriverKind kind) {
  return kind == DriverKind::kGpu ? kGpuDriverName : kComputeDomainDriverName;
}
}  // namespace config

App::App(config::Options options, std::unique_ptr<systemd::Notifier> notifier)
    : options_(std::move(options)), notifier_(std::move(notifier)) {}

App::~App() = default;

namespace {

// What the agent runs beside the supervisor's own tasks, in start order: the D-Bus status service,
// the metrics page, one component per driver, the gRPC health service and the ComputeDomain
// controller, each only where its option asks for it.
std::vector<std::unique_ptr<Component>> make_components(RunContext& ctx) {
  std::vector<std::unique_ptr<Component>> components;
  const auto& options = ctx.options;
  auto status_service = std::make_unique<systemd_bus::StatusService>(ctx.system_bus);
  status_service->update(ctx.status.snapshot());
  ctx.status.on_change([svc = status_service.get()](const systemd_bus::StatusSnapshot& s) { svc->update(s); });
  components.push_back(std::move(status_service));
  // --http-endpoint + --metrics-path: the Prometheus page (bound now: a bad address fails start-up).
  if (metrics::MetricsComponent::should_run(options))
    components.push_back(std::make_unique<metrics::MetricsComponent>(ctx));
  std::vector<drivers::DriverComponent*> driver_components;
  for (auto kind : options.drivers) {
    components.push_back(std::make_unique<drivers::DriverComponent>(kind, ctx));
    driver_components.push_back(static_cast<drivers::DriverComponent*>(components.back().get()));
  }
  // --healthcheck-port (-1 off): grpc.health.v1 for kubelet's probes.
  if (options.healthcheck_port >= 0) {
    std::vector<health::HealthTarget> targets;
    for (auto* d : driver_components)
      targets.push_back({d->name(), d->sockets(), [d] { return d->registration().state; }, [d] { return d->waiting(); }});
    auto hc = std::make_unique<health::HealthComponent>(ctx.executor, ctx.workers, options.healthcheck_port,
                                                        std::move(targets));
    for (auto* d : driver_components) d->on_registration_change([h = hc.get()] { h->recheck(); });
    components.push_back(std::move(hc));
  }
  // The ComputeDomain controller role (HostManagedIMEX, --controller): elected among the agents.
  if (controller::ComputeDomainController::should_run(options)) {
    components.push_back(std::make_unique<controller::ComputeDomainController>(ctx));
  }
  return components;
}

// READY=1, the log line with the start's duration and the D-Bus status, once every component is ready.
void announce_when_ready(runtime::Readiness& readiness, systemd::Notifier& notifier, status::AgentStatus& status,
                         std::chrono::steady_clock::time_point started) {
  readiness.on_ready([&notifier, &status, started] {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    nvdra::logger("agent")->info("ready ms={}", ms.count());
    notifier.ready();
    status.set_ready(true);
  });
}

// STATUS= names what the start still waits for (kubelet's registration, a first publish, ...).
void announce_waiting(const runtime::Readiness& readiness, systemd::Notifier& notifier) {
  std::string waiting;
  for (const auto& p : readiness.pending()) waiting += (waiting.empty() ? "" : ", ") + p;
  notifier.status("waiting for: " + waiting);
}

}  // namespace

int App::run() {
  const auto started = std::chrono::steady_clock::now();
  auto log = nvdra::logger("agent");
  // One thread runs the loop; everything blocking goes to `workers`.
  asio::io_context io(1);
  runtime::WorkerPool workers(4);
  runtime::Readiness readiness;
  runtime::Supervisor supervisor(io.get_executor());
  status::AgentStatus status(NVDRA_VERSION, options_.node_name);
  // One system-bus connection for the status service and the IMEX unit watcher. No bus (a pod
  // without the host's bus) is reported once by the connection; the agent works on without it.
  systemd_bus::BusConnection bus(io.get_executor(), systemd_bus::BusEndpoint{});
  drivers::NodeGpus gpus(io.get_executor(), workers, options_);
  std::vector<std::string> driver_names;
  for (auto kind : options_.drivers) driver_names.emplace_back(config::driver_name(kind));
  metrics::Metrics metrics(options_.node_name, NVDRA_VERSION, driver_names);
  // The slices' LIST is all a start needs to publish: their watch opens once the agent is ready, so
  // its request and TLS handshake stay off the start (bounded like driver-managed IMEX's watches).
  auto slice_watch_after = [&readiness, ex = io.get_executor(), log]() -> asio::awaitable<void> {
    const bool ready = co_await drivers::until_ready(readiness, ex, drivers::kAfterReadyAtMost);
    log->debug("watching ResourceSlices ({})",
               ready ? std::string("the agent is ready")
                     : fmt::format("not ready after {} s", drivers::kAfterReadyAtMost.count()));
  };
  drivers::SharedServerFacts server_facts(
      options_.node_name,
      std::make_shared<drivers::ServedFieldsFile>(workers, drivers::ServedFieldsFile::path_for(options_)),
      slice_watch_after);
  drivers::ClientConfigCache client_configs(io.get_executor(), workers,
                                            drivers::ClientConfigCache::from_files(options_.kubeconfig));
  RunContext ctx{io.get_executor(), workers, readiness,    *notifier_,     options_, status,
                 bus,               gpus,    server_facts, client_configs, metrics};
  // Past the grace period the process ends here, without unwinding: destroying the components under
  // coroutines still suspended in them reaches freed objects (ASan saw an in-flight request's
  // connection slot and gRPC's shutdown thread do it). Everything on disk is already crash-safe.
  supervisor.on_deadline([&supervisor, log] {
    log->error("stopped exit_code={} without waiting for the tasks above", supervisor.exit_code());
    spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
    std::_Exit(supervisor.exit_code());
  });

  // Signals first: from here on SIGTERM means a clean stop, so STATUS=starting may announce it
  // (main() blocked them before any thread; one that came earlier waits in the signalfd).
  runtime::StopSignals signals(io.get_executor());
  notifier_->status("starting");
  log->info("starting node={} drivers={} gates={}", options_.node_name, options_.drivers.size(),
            options_.gates.describe());

  supervisor.spawn(
      "signals",
      [&]() -> asio::awaitable<void> {
        const int sig = co_await signals.wait();
        log->info("signal={} received, shutting down", ::strsignal(sig));
        notifier_->stopping();
        supervisor.stop();
      },
      runtime::OnFailure::kExitProcess);

  systemd::Watchdog watchdog(*notifier_);
  supervisor.spawn("watchdog", [&watchdog] { return watchdog.run(); }, runtime::OnFailure::kExitProcess);

  supervisor.spawn("system-bus", [&bus] { return bus.run(); }, runtime::OnFailure::kRestart);
  auto components = make_components(ctx);

  // Before the components: the drivers' API clients (TLS contexts) are made on this thread while a
  // worker opens NVML.
  gpus.prefetch();
  for (auto& c : components) c->declare(readiness);
  announce_when_ready(readiness, *notifier_, status, started);
  for (auto& c : components) {
    Component* raw = c.get();
    supervisor.spawn(raw->name(), [raw] { return raw->run(); }, raw->on_failure());
  }
  readiness.seal();
  if (!readiness.ready()) announce_waiting(readiness, *notifier_);

  io.run();
  workers.join();
  const int code = supervisor.exit_code();
  log->info("stopped exit_code={}", code);
  return code;
}

}  // namespace nvdra
