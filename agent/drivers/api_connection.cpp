#include "agent/drivers/api_connection.hpp"

#include <cstdlib>

#include "agent/base/random_seed.hpp"
#include "agent/drivers/client_config_cache.hpp"
#include "agent/metrics/metered_api_server.hpp"
#include "agent/metrics/metrics.hpp"
#include "k8s/client_config.hpp"
#include "k8s/https_api_server.hpp"

namespace nvdra::drivers {

bool api_server_configured(const config::Options& options) {
  return !options.kubeconfig.empty() || std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
}

namespace {

using Awaitable = boost::asio::awaitable<Result<std::shared_ptr<k8s::ApiServer>>>;

// One for the agent, shared by all its API clients while any lives: the agent comes back after an
// API server restart as one client, at one moment of the spread (ReconnectPacing). Executor thread.
std::shared_ptr<ReconnectPacing> agent_reconnect_pacing(const config::Options& o) {
  if (o.api_reconnect_spread.count() <= 0) return nullptr;
  static std::weak_ptr<ReconnectPacing> shared;
  if (auto p = shared.lock()) return p;
  auto p = std::make_shared<ReconnectPacing>(o.api_reconnect_spread, std::chrono::seconds(30), random_seed());
  shared = p;
  return p;
}

Awaitable connect(RunContext& ctx, double qps, int burst, const char* limit_options) {
  auto cfg = co_await ctx.client_configs.get();
  if (!cfg) co_return cfg.error();
  cfg->qps = qps;
  cfg->burst = burst;
  cfg->limit_options = limit_options;
  cfg->reconnect_pacing = agent_reconnect_pacing(ctx.options);
  auto api = k8s::HttpsApiServer::create(ctx.executor, std::move(*cfg));
  if (!api) co_return api.error();
  // Every request is counted for the metrics page (nvdra_api_*).
  co_return std::shared_ptr<k8s::ApiServer>(std::make_shared<metrics::MeteredApiServer>(std::move(*api), ctx.metrics));
}

}  // namespace

Awaitable connect_api_server(RunContext& ctx) {
  return connect(ctx, ctx.options.kube_api_qps, ctx.options.kube_api_burst, "--kube-api-qps/--kube-api-burst");
}

Awaitable connect_claim_reader(RunContext& ctx) {
  return connect(ctx, ctx.options.claim_read_qps, ctx.options.claim_read_burst,
                 "--claim-read-qps/--claim-read-burst");
}

}  // namespace nvdra::drivers
