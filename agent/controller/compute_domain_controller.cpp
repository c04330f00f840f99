#include "agent/controller/compute_domain_controller.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <stdexcept>

#include "agent/base/log.hpp"
#include "agent/drivers/client_config_cache.hpp"
#include "agent/config/options.hpp"
#include "agent/controller/compute_domain_reconciler.hpp"
#include "agent/metrics/metered_api_server.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/status/agent_status.hpp"
#include "k8s/client_config.hpp"
#include "k8s/https_api_server.hpp"
#include "k8s/lease_elector.hpp"

namespace nvdra::controller {

namespace asio = boost::asio;
using asio::awaitable;

ComputeDomainController::ComputeDomainController(RunContext& ctx) : ctx_(ctx) {}
ComputeDomainController::~ComputeDomainController() = default;

bool ComputeDomainController::should_run(const config::Options& options) {
  return options.controller && options.driver_enabled(config::DriverKind::kComputeDomain) &&
         options.gates.enabled(config::gate::kHostManagedIMEX);
}

void ComputeDomainController::report(const std::string& message) { ctx_.status.record_error(name(), message); }

awaitable<void> ComputeDomainController::run() {
  auto log = nvdra::logger("controller");
  const auto& o = ctx_.options;
  if (o.kubeconfig.empty() && std::getenv("KUBERNETES_SERVICE_HOST") == nullptr) {
    // Reported once; the role stays idle instead of restarting in a loop.
    log->warn("no --kubeconfig and not in a cluster: the ComputeDomain controller role is off");
    report("no Kubernetes API server configured (--kubeconfig, or run in a pod): controller role off");
    asio::steady_timer forever(ctx_.executor, asio::steady_timer::time_point::max());
    co_await forever.async_wait(asio::use_awaitable);
  }
  // Read on a worker, shared with the drivers' clients made at the same start.
  auto cfg = co_await ctx_.client_configs.get();
  if (!cfg) {
    report("API client: " + cfg.error().describe());
    throw std::runtime_error("controller: " + cfg.error().describe());  // restarted with backoff
  }
  cfg->qps = o.kube_api_qps;
  cfg->burst = o.kube_api_burst;
  auto created = k8s::HttpsApiServer::create(ctx_.executor, std::move(*cfg));
  if (!created) {
    report("API client: " + created.error().describe());
    throw std::runtime_error("controller: " + created.error().describe());
  }
  std::shared_ptr<k8s::ApiServer> api = std::make_shared<metrics::MeteredApiServer>(std::move(*created), ctx_.metrics);

  k8s::LeaseElectorOptions eo;
  eo.ns = o.namespace_name;
  eo.name = kControllerLeaseName;
  eo.identity = o.node_name;
  elector_ = std::make_unique<k8s::LeaseElector>(ctx_.executor, api, eo);
  elector_->on_error([this](const std::string& m) { report(m); });
  reconciler_ = std::make_unique<ComputeDomainReconciler>(ctx_.executor, api);
  reconciler_->on_error([this](const std::string& m) { report(m); });
  log->info("controller role: electing through lease {}/{} as {}", eo.ns, eo.name, eo.identity);
  using namespace asio::experimental::awaitable_operators;
  co_await (elector_->run() || lead());
}

awaitable<void> ComputeDomainController::lead() {
  using namespace asio::experimental::awaitable_operators;
  for (;;) {
    co_await elector_->wait_leader();
    nvdra::logger("controller")->info("leading: reconciling ComputeDomains");
    co_await (reconciler_->run() || elector_->wait_lost());
    nvdra::logger("controller")->info("not leading: ComputeDomain reconciliation stopped");
  }
}

}  // namespace nvdra::controller
