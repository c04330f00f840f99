#pragma once
// What each driver publishes for this node, and the API connection the publisher uses.
//
// The gpu driver discovers its devices through NVML (on the worker pool: NVML blocks) and
// publishes them under upstream's names; the compute-domain driver publishes nothing until the
// HostManagedIMEX channel is added. Without a kubeconfig and outside a cluster there is no API
// server to publish to: the agent then only serves kubelet, and says so once.
#include <boost/asio/awaitable.hpp>

#include <memory>

#include "agent/base/device.hpp"
#include "agent/base/result.hpp"
#include "agent/component.hpp"
#include "agent/config/options.hpp"

namespace nvdra::k8s { class ApiServer; }

namespace nvdra::drivers {

// True when --kubeconfig is given or the agent runs in a pod (KUBERNETES_SERVICE_HOST set).
bool api_server_configured(const config::Options& options);

// The HTTPS client for the configured API server; an error names the kubeconfig or in-cluster file.
Result<std::shared_ptr<k8s::ApiServer>> connect_api_server(RunContext& ctx);

// Devices of `kind` on this node, ready for the ResourceSlice publisher.
boost::asio::awaitable<Result<DriverResources>> discover_resources(config::DriverKind kind, RunContext& ctx);

}  // namespace nvdra::drivers
