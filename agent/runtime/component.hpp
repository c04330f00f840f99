#pragma once
// Component — a long-lived part of the agent (a driver's kubelet plugin, its slice publisher, the
// IMEX unit watcher, the status service, …). The App starts each one's run() under the Supervisor;
// run() returns when cancelled. Components declare the readiness conditions they will satisfy
// before anything runs, so READY=1 cannot be sent early.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <string>

#include "agent/runtime/supervisor.hpp"

namespace nvdra::config { struct Options; }
namespace nvdra::systemd { class Notifier; }
namespace nvdra::systemd_bus { class BusConnection; }
namespace nvdra::status { class AgentStatus; }
namespace nvdra::drivers {
class ClientConfigCache;
class NodeGpus;
class SharedServerFacts;
}  // namespace nvdra::drivers
namespace nvdra::metrics { class Metrics; }

namespace nvdra::runtime {
class Readiness;
class WorkerPool;
}  // namespace nvdra::runtime

namespace nvdra {

// What every component may use. All references outlive every component.
struct RunContext {
  boost::asio::any_io_executor executor;  // the one io_context
  runtime::WorkerPool& workers;           // for blocking work, awaited
  runtime::Readiness& readiness;
  systemd::Notifier& notifier;
  const config::Options& options;
  status::AgentStatus& status;             // what host tooling sees (D-Bus StatusService)
  systemd_bus::BusConnection& system_bus;  // shared: status service and IMEX unit watcher
  drivers::NodeGpus& gpus;                 // the one NVML session, shared by both drivers
  drivers::SharedServerFacts& server_facts;  // the API server's version, Node and fields, asked once
  drivers::ClientConfigCache& client_configs;  // the kubeconfig every API client is made from, read once
  metrics::Metrics& metrics;               // the Prometheus registry (a metrics::Sink for the leaves)
};

class Component {
 public:
  virtual ~Component() = default;
  virtual std::string name() const = 0;
  virtual runtime::OnFailure on_failure() const { return runtime::OnFailure::kRestart; }
  virtual void declare(runtime::Readiness&) {}
  virtual boost::asio::awaitable<void> run() = 0;
};

}  // namespace nvdra
