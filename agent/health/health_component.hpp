#pragma once
// HealthComponent — --healthcheck-port: the grpc.health.v1 service kubelet's probes ask
// (upstream-driver.md §8.3). Services "" and "liveness" (upstream's; the DaemonSet's probes name
// "liveness") and one per enabled driver name (gpu.nvidia.com, compute-domain.nvidia.com). A driver
// is SERVING while kubelet has it registered (its last NotifyRegistrationStatus said so) and its
// plugin answers upstream's probe over its own sockets (probe_plugin); "" and "liveness" are SERVING
// while every driver is. Re-checked every `recheck` and at once when a registration changes.
//
// Unlike upstream, which runs the probe inside each Check, the answer is kept ready: a probe storm
// costs nothing, Watch works, and a check never waits on the plugin. The listening port (0 = any
// free one) is logged. Failing to listen ends the process, as it does upstream.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/kubelet/plugin_server.hpp"
#include "agent/runtime/component.hpp"

namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::health {

class HealthEndpoint;

// One driver as the health check sees it.
struct HealthTarget {
  std::string driver;                                          // also its health service name
  kubelet::SocketPaths sockets;                                // where its plugin listens
  std::function<kubelet::RegistrationState()> registration;    // io_context thread
  // Why the driver cannot serve yet through no fault of its own ("waiting for the NVIDIA driver: …"),
  // else "" (may be empty): its service says NOT_SERVING with that reason, but liveness stays
  // SERVING — restarting the agent would not bring the driver (issue #30).
  std::function<std::string()> waiting;
};

inline constexpr std::chrono::seconds kRecheckInterval{5};
inline constexpr std::chrono::seconds kProbeDeadline{5};

class HealthComponent final : public Component {
 public:
  HealthComponent(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, int port,
                  std::vector<HealthTarget> targets, std::chrono::milliseconds recheck = kRecheckInterval);
  ~HealthComponent() override;

  std::string name() const override { return "healthcheck"; }
  runtime::OnFailure on_failure() const override { return runtime::OnFailure::kExitProcess; }
  boost::asio::awaitable<void> run() override;

  // io_context thread: check again now (a driver's registration changed).
  void recheck();
  // The bound port once run() listens, else 0. io_context thread.
  int port() const { return port_; }
  // Every service name served, "" first.
  std::vector<std::string> services() const;

 private:
  boost::asio::awaitable<void> check_until_cancelled();
  boost::asio::awaitable<void> check_once();

  boost::asio::any_io_executor ex_;
  runtime::WorkerPool& workers_;
  int requested_port_;
  int port_ = 0;
  std::vector<HealthTarget> targets_;
  std::chrono::milliseconds recheck_;
  boost::asio::steady_timer wake_;
  bool dirty_ = true;
  std::unique_ptr<HealthEndpoint> endpoint_;
  std::vector<std::string> last_errors_;  // per target, for logging changes only
  int last_all_ = -1;                     // -1 unknown, 0 NOT_SERVING, 1 SERVING
};

}  // namespace nvdra::health
