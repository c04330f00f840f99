#pragma once
// The API connection the drivers use to read claims and publish ResourceSlices. Without a
// kubeconfig and outside a cluster there is none: the agent then only serves kubelet, and says so
// once.
#include <boost/asio/awaitable.hpp>

#include <memory>

#include "agent/base/result.hpp"
#include "agent/runtime/component.hpp"
#include "agent/config/options.hpp"

namespace nvdra::k8s { class ApiServer; }

namespace nvdra::drivers {

// True when --kubeconfig is given or the agent runs in a pod (KUBERNETES_SERVICE_HOST set).
bool api_server_configured(const config::Options& options);

// The HTTPS client for the configured API server; an error names the kubeconfig or in-cluster file.
// The files are read on a worker, once for the clients made together (ClientConfigCache).
boost::asio::awaitable<Result<std::shared_ptr<k8s::ApiServer>>> connect_api_server(RunContext& ctx);
// The same server through a client with its own limits (--claim-read-qps/-burst) for claim reads.
boost::asio::awaitable<Result<std::shared_ptr<k8s::ApiServer>>> connect_claim_reader(RunContext& ctx);

}  // namespace nvdra::drivers
