#include "agent/drivers/api_connection.hpp"

#include <cstdlib>

#include "agent/metrics/metered_api_server.hpp"
#include "agent/metrics/metrics.hpp"
#include "k8s/client_config.hpp"
#include "k8s/https_api_server.hpp"

namespace nvdra::drivers {

bool api_server_configured(const config::Options& options) {
  return !options.kubeconfig.empty() || std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
}

namespace {

Result<std::shared_ptr<k8s::ApiServer>> connect(RunContext& ctx, double qps, int burst, const char* limit_options) {
  const auto& o = ctx.options;
  auto cfg = k8s::load_client_config(o.kubeconfig, qps, burst);
  if (!cfg) return cfg.error();
  cfg->limit_options = limit_options;
  cfg->reconnect_spread = o.api_reconnect_spread;
  auto api = k8s::HttpsApiServer::create(ctx.executor, std::move(*cfg));
  if (!api) return api.error();
  // Every request is counted for the metrics page (nvdra_api_*).
  return std::shared_ptr<k8s::ApiServer>(std::make_shared<metrics::MeteredApiServer>(std::move(*api), ctx.metrics));
}

}  // namespace

Result<std::shared_ptr<k8s::ApiServer>> connect_api_server(RunContext& ctx) {
  return connect(ctx, ctx.options.kube_api_qps, ctx.options.kube_api_burst, "--kube-api-qps/--kube-api-burst");
}

Result<std::shared_ptr<k8s::ApiServer>> connect_claim_reader(RunContext& ctx) {
  return connect(ctx, ctx.options.claim_read_qps, ctx.options.claim_read_burst,
                 "--claim-read-qps/--claim-read-burst");
}

}  // namespace nvdra::drivers
