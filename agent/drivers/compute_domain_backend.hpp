#pragma once
// ComputeDomainBackend — the compute-domain.nvidia.com driver: HostManagedIMEX mode (issue #7) and,
// without the gate, upstream's default driver-managed mode (issue #29, driver_managed_start.hpp).
// start(): with the HostManagedIMEX gate, reads the IMEX channel major from <host-root>/proc/devices
// (missing: this driver fails to start with what the host lacks and how to fix it; the gpu driver
// is not affected) and the node's NVLink clique from NVML; opens the checkpoint in
// <kubelet-plugins-dir>/compute-domain.nvidia.com/ and the CDI store, drops claims a crash left
// half-prepared, and follows the host's IMEX unit over the shared system bus (--imex-check).
// resources(): channel-0 only (no daemon device) under the gate; channel-0 and daemon-0 without it
// (nothing when a driver-managed start-up check failed).
#include <chrono>
#include <functional>
#include <memory>

#include "agent/drivers/driver_backend.hpp"
#include "agent/drivers/until_ready.hpp"

namespace nvdra::drivers {

class ImexUnitWatcher;
struct ComputeDomainClaimOptions;

class ComputeDomainBackend final : public DriverBackend {
 public:
  explicit ComputeDomainBackend(RunContext& ctx);
  ~ComputeDomainBackend() override;

  boost::asio::awaitable<Status> start(std::shared_ptr<k8s::ApiServer> api) override;
  kubelet::ClaimHandler& claims() override;
  boost::asio::awaitable<Result<DriverResources>> resources() override;
  // Driver-managed mode: the ComputeDomain and clique watches, once the agent is ready (READY=1) or
  // kAfterReadyAtMost (until_ready.hpp) has passed, and the domain-directory cleanup (DomainCleanup);
  // otherwise waits until cancelled.
  boost::asio::awaitable<void> run() override;
  const claims::Checkpoint* checkpoint() const override;

  // The unit watcher, when --imex-check is not off and the gate is on (after start()).
  const ImexUnitWatcher* watcher() const;

 private:
  struct Parts;
  // start()'s phases.
  Error failed(Error e);  // recorded for status, then returned
  ComputeDomainClaimOptions claim_options(bool host_managed);
  boost::asio::awaitable<Status> read_host_managed_facts(ComputeDomainClaimOptions& options);
  boost::asio::awaitable<Status> open_stores(Parts& parts);
  boost::asio::awaitable<void> start_host_managed(Parts& parts, std::shared_ptr<k8s::ApiServer> api,
                                                  ComputeDomainClaimOptions options);
  std::function<Status()> follow_imex_unit(Parts& parts);
  RunContext& ctx_;
  std::unique_ptr<Parts> parts_;
};

std::unique_ptr<DriverBackend> make_compute_domain_backend(RunContext& ctx);

}  // namespace nvdra::drivers
