#pragma once
// DriverComponent — one DRA driver (gpu.nvidia.com or compute-domain.nvidia.com) inside the agent.
// It owns the driver's data directory under --kubelet-plugins-directory-path and declares the two
// readiness conditions kubelet and the scheduler depend on: registered with kubelet, and devices
// published. The kubelet plugin and the ResourceSlice publisher satisfy them.
#include "agent/component.hpp"
#include "agent/config/options.hpp"

namespace nvdra::drivers {

class DriverComponent final : public Component {
 public:
  DriverComponent(config::DriverKind kind, RunContext& ctx);
  std::string name() const override;
  void declare(runtime::Readiness& readiness) override;
  boost::asio::awaitable<void> run() override;

  static std::string registered_condition(config::DriverKind kind);
  static std::string published_condition(config::DriverKind kind);

 private:
  config::DriverKind kind_;
  RunContext& ctx_;
};

}  // namespace nvdra::drivers
