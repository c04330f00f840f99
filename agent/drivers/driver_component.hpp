#pragma once
// DriverComponent — one DRA driver (gpu.nvidia.com or compute-domain.nvidia.com) inside the agent.
// It owns the driver's data directory under --kubelet-plugins-directory-path and its kubelet plugin
// (registration + DRA sockets, kubelet::PluginServer), and declares the two readiness conditions
// kubelet and the scheduler depend on: registered with kubelet (satisfied when kubelet's
// NotifyRegistrationStatus says so), and devices published (the ResourceSlice publisher's). What
// differs between the drivers (start-up, claims, devices) is its DriverBackend; each run() builds
// a fresh one, so a restart by the Supervisor starts clean.
#include <functional>
#include <memory>
#include <vector>

#include "agent/runtime/component.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/driver_backend.hpp"
#include "agent/drivers/metered_claim_handler.hpp"
#include "agent/drivers/quiet_trim.hpp"
#include "agent/drivers/status_reporting.hpp"
#include "agent/kubelet/plugin_server.hpp"

namespace nvdra::k8s { class ApiServer; }

namespace nvdra::k8s {
class SlicePublisher;
class EventRecorder;
}  // namespace nvdra::k8s

namespace nvdra::drivers {

class DriverComponent final : public Component {
 public:
  // Throws std::invalid_argument (a start-up error) when a socket path cannot fit a unix socket.
  DriverComponent(config::DriverKind kind, RunContext& ctx);
  ~DriverComponent() override;
  std::string name() const override;
  void declare(runtime::Readiness& readiness) override;
  boost::asio::awaitable<void> run() override;

  // What kubelet last said about this driver's registration (io_context thread; for the status
  // service). kWaiting while not serving.
  // Why the driver waits for the node ("waiting for the NVIDIA driver: …"), else "".
  std::string waiting() const;
  kubelet::RegistrationStatus registration() const;
  // Where this driver's plugin listens (fixed for the component's life).
  kubelet::SocketPaths sockets() const;
  // `fn` runs on the io_context thread after each change of registration(): kubelet's
  // NotifyRegistrationStatus, or the plugin stopping (for the gRPC health check).
  void on_registration_change(std::function<void()> fn) { registration_listeners_.push_back(std::move(fn)); }

  static std::string registered_condition(config::DriverKind kind);
  static std::string published_condition(config::DriverKind kind);

 private:
  kubelet::PluginServerConfig plugin_config() const;
  boost::asio::awaitable<void> serve();  // start the backend and the plugin, then publish until cancelled
  // serve()'s part after the API clients: the backend, the plugin, then publish().
  boost::asio::awaitable<void> start_and_publish(std::shared_ptr<k8s::ApiServer> claim_reader);
  // serve() with the Event recorder draining beside it (when there is an API server).
  boost::asio::awaitable<void> serve_with_events();
  // Hands the devices to the publisher (when there is an API server) and follows health until cancelled.
  boost::asio::awaitable<void> publish();
  boost::asio::awaitable<void> follow_health();
  boost::asio::awaitable<void> serve_devices();  // device health followed, or nothing, until cancelled
  std::vector<systemd_bus::DeviceStatus> health_rows(const std::vector<PublishedDevice>& devices) const;
  void report(std::string detail);  // this driver's row in AgentStatus
  void registration_changed();

  config::DriverKind kind_;
  RunContext& ctx_;
  // Rebuilt by each run(), destroyed in reverse: the plugin stops before the claims it calls.
  // Kept across runs, so that what a failed start reported is still sent (flushed after it fails).
  std::unique_ptr<k8s::EventRecorder> events_;
  std::unique_ptr<DriverBackend> backend_;
  std::unique_ptr<StatusReportingHandler> claims_;
  std::unique_ptr<MeteredClaimHandler> metered_;  // nvidia_dra_* around claims_
  std::unique_ptr<kubelet::ClaimHandler> event_claims_;
  QuietTrim quiet_trim_;  // the heap trimmed after a burst of claim calls, and after the slices are stored
  std::unique_ptr<kubelet::ClaimHandler> trimming_;  // outermost: tells quiet_trim_ of each call
  std::unique_ptr<kubelet::PluginServer> plugin_;
  std::unique_ptr<k8s::SlicePublisher> publisher_;
  bool published_ = false;
  std::vector<std::function<void()>> registration_listeners_;
};

}  // namespace nvdra::drivers
