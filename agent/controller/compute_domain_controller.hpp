#pragma once
// ComputeDomainController — the controller role inside the agent (HostManagedIMEX), so that no
// controller Deployment is needed in this mode. Every agent runs it; one leads, chosen through the
// Lease "compute-domain-controller" in --namespace (identity: the node name). While leading it runs
// the ComputeDomainReconciler; when leadership is lost the reconciler is cancelled at once, and on
// shutdown the Lease is released so a peer takes over without waiting for it to expire.
// Runs only when the compute-domain driver is enabled, HostManagedIMEX is on and --controller=true
// (should_run()). Failures go to the agent status (record_error) and the log; it never crashes.
#include <memory>
#include <string>

#include "agent/runtime/component.hpp"

namespace nvdra::k8s {
class ApiServer;
class LeaseElector;
}  // namespace nvdra::k8s

namespace nvdra::controller {

class ComputeDomainReconciler;

inline constexpr const char* kControllerLeaseName = "compute-domain-controller";

class ComputeDomainController final : public Component {
 public:
  explicit ComputeDomainController(RunContext& ctx);
  ~ComputeDomainController() override;

  static bool should_run(const config::Options& options);

  std::string name() const override { return "compute-domain-controller"; }
  boost::asio::awaitable<void> run() override;

 private:
  boost::asio::awaitable<void> lead();
  void report(const std::string& message);

  RunContext& ctx_;
  std::unique_ptr<k8s::LeaseElector> elector_;        // rebuilt by each run()
  std::unique_ptr<ComputeDomainReconciler> reconciler_;
};

}  // namespace nvdra::controller
