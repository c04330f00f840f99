#include "agent/drivers/node_resources.hpp"

#include <cstdlib>
#include <filesystem>

#include "agent/runtime/worker_pool.hpp"
#include "k8s/client_config.hpp"
#include "k8s/https_api_server.hpp"
#include "nvml/discovery.hpp"
#include "nvml/gpu_library.hpp"
#include "nvml/published_devices.hpp"

namespace nvdra::drivers {

bool api_server_configured(const config::Options& options) {
  return !options.kubeconfig.empty() || std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
}

Result<std::shared_ptr<k8s::ApiServer>> connect_api_server(RunContext& ctx) {
  const auto& o = ctx.options;
  auto cfg = k8s::load_client_config(o.kubeconfig, o.kube_api_qps, o.kube_api_burst);
  if (!cfg) return cfg.error();
  auto api = k8s::HttpsApiServer::create(ctx.executor, std::move(*cfg));
  if (!api) return api.error();
  return std::shared_ptr<k8s::ApiServer>(std::move(*api));
}

boost::asio::awaitable<Result<DriverResources>> discover_resources(config::DriverKind kind, RunContext& ctx) {
  if (kind != config::DriverKind::kGpu) co_return DriverResources{};
  nvml::LoadOptions load{ctx.options.nvml_library, ctx.options.nvidia_driver_root};
  const std::string sysfs = (std::filesystem::path(ctx.options.host_root) / "sys").string();
  auto discovered = [load, sysfs]() -> Result<DriverResources> {
    auto lib = nvml::open_nvml(load);
    if (!lib) return lib.error();
    auto model = nvml::discover(**lib, nvml::DiscoveryOptions{sysfs});
    if (!model) return model.error();
    return DriverResources{nvml::published_gpu_devices(*model), {}};
  };
  co_return co_await ctx.workers.run(std::move(discovered));
}

}  // namespace nvdra::drivers
