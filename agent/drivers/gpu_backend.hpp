#pragma once
// GpuBackend — gpu.nvidia.com inside the agent: NVML discovery (the devices it publishes and the
// inventory claims are checked against), the driver's CDI edits, the checkpoint in the plugin
// data directory, and the GpuClaimHandler over them. start() repairs what a crash left behind
// (claims::GpuClaimHandler::recover) before kubelet is served, and unprepares the claims deleted
// while the agent was down once it serves (gone_claim_sweep.hpp).
#include <chrono>
#include <memory>
#include <string>

#include "agent/drivers/driver_backend.hpp"

namespace nvdra::claims {
struct GpuClaimHandlerOptions;
struct RecoveryReport;
}  // namespace nvdra::claims
namespace nvdra::config { struct Options; }

namespace nvdra::drivers {

struct GoneClaimReport;

class GpuBackend final : public DriverBackend {
 public:
  explicit GpuBackend(RunContext& ctx);
  ~GpuBackend() override;

  boost::asio::awaitable<Status> start(std::shared_ptr<k8s::ApiServer> api) override;
  kubelet::ClaimHandler& claims() override;
  kubelet::HealthSource* health() override;
  boost::asio::awaitable<void> run_health() override;
  void fill_health(std::vector<systemd_bus::DeviceStatus>& rows) const override;
  boost::asio::awaitable<Result<DriverResources>> resources() override;
  // Claims deleted while the agent was down, unprepared once it is ready; then until cancelled.
  boost::asio::awaitable<void> run() override;
  const claims::Checkpoint* checkpoint() const override;
  boost::asio::awaitable<std::string> driver_changed() override;  // gpu_backend_recovery.cpp
  std::string notice() const override;

  struct Parts;  // what start() builds (defined in the .cpp)
  void publish_fabric_status();  // active FM partitions into the D-Bus status
  boost::asio::awaitable<void> fabric_connected();  // FM reached after start (background retry)

 private:
  DriverResources current_resources() const;
  // recover()'s outcome: log lines, Events, status errors and metrics (gpu_backend_recovery.cpp).
  void report_recovery(const claims::RecoveryReport& report);
  void report_gone_claims(const GoneClaimReport& report, std::chrono::duration<double, std::milli> took);
  void wire_passthrough(Parts& p, claims::GpuClaimHandlerOptions& ho, const config::Options& o);
  // start()'s phases, in order (gpu_backend.cpp).
  boost::asio::awaitable<Status> open_gpus(Parts& p);
  boost::asio::awaitable<Result<bool>> open_state(Parts& p, const std::string& data_dir);
  boost::asio::awaitable<Status> open_handler(Parts& p, const std::shared_ptr<k8s::ApiServer>& api,
                                              const std::string& data_dir);
  claims::GpuClaimHandlerOptions handler_options(const Parts& p, const std::string& data_dir);
  boost::asio::awaitable<void> rebuild_claims(Parts& p, k8s::ApiServer* api);
  void watch_health(Parts& p);

  RunContext& ctx_;
  std::unique_ptr<Parts> parts_;
};

}  // namespace nvdra::drivers
