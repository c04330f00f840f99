#pragma once
// MetricsComponent — serves the Metrics page on --http-endpoint at --metrics-path while the agent
// runs. Constructed only when both are set (should_run); the listener is bound at construction so
// an address that cannot be used fails start-up. A failed run() (the Supervisor restarts it) binds
// again.
#include <memory>

#include "agent/runtime/component.hpp"

namespace nvdra::metrics {

class MetricsServer;

class MetricsComponent final : public Component {
 public:
  // Empty --http-endpoint or empty --metrics-path: no listener (upstream: both off by default).
  static bool should_run(const config::Options& options);

  explicit MetricsComponent(RunContext& ctx);
  ~MetricsComponent() override;
  std::string name() const override { return "metrics"; }
  boost::asio::awaitable<void> run() override;

 private:
  std::unique_ptr<MetricsServer> listen() const;

  RunContext& ctx_;
  std::unique_ptr<MetricsServer> server_;
};

}  // namespace nvdra::metrics
