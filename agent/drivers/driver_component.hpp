#pragma once
// DriverComponent — one DRA driver (gpu.nvidia.com or compute-domain.nvidia.com) inside the agent.
// It owns the driver's data directory under --kubelet-plugins-directory-path and its kubelet plugin
// (registration + DRA sockets, kubelet::PluginServer), and declares the two readiness conditions
// kubelet and the scheduler depend on: registered with kubelet (satisfied when kubelet's
// NotifyRegistrationStatus says so), and devices published (the ResourceSlice publisher's; trivially
// satisfied in this build).
#include <memory>

#include "agent/component.hpp"
#include "agent/config/options.hpp"
#include "agent/kubelet/plugin_server.hpp"

namespace nvdra::kubelet { class ClaimHandler; }

namespace nvdra::k8s { class SlicePublisher; }

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
  kubelet::RegistrationStatus registration() const;

  static std::string registered_condition(config::DriverKind kind);
  static std::string published_condition(config::DriverKind kind);

 private:
  kubelet::PluginServerConfig plugin_config() const;
  boost::asio::awaitable<void> serve();    // start the plugin, then publish until cancelled
  boost::asio::awaitable<void> publish();  // discover and keep this node's ResourceSlices right

  config::DriverKind kind_;
  RunContext& ctx_;
  std::unique_ptr<kubelet::ClaimHandler> claims_;
  std::unique_ptr<kubelet::PluginServer> plugin_;
  std::unique_ptr<k8s::SlicePublisher> publisher_;  // rebuilt by each run(): a restart starts clean
};

}  // namespace nvdra::drivers
