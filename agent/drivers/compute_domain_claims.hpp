#pragma once
// ComputeDomainClaimHandler — prepare/unprepare of compute-domain.nvidia.com channel claims in
// HostManagedIMEX mode (seed §7.2–§7.4) behind kubelet::ClaimHandler (see its contract).
//
// Prepare, in the seed's order: checkpoint fast path (a completed claim answers again) → claim
// lookup → daemon devices/configs refused (§7.4) → decode and validate the opaque configs →
// exactly one allocation result → allocationMode "" or Single → channel-0 conflict with another
// completed claim (the checkpoint is the node-local backstop) → the ComputeDomain (metadata.uid ==
// domainID) exists in the claim's namespace → non-empty NVLink clique → --imex-check=enforce →
// PrepareStarted → CDI spec injecting /dev/nvidia-caps-imex-channels/channel0 → PrepareCompleted, the
// last three on the step pipeline (domain_pipeline.hpp: DomainClaimBook's spec step and commits).
// No node label, no readiness wait, no /imexd mount. Unprepare removes the CDI spec and the
// checkpoint entry only; the host's IMEX is never touched.
//
// Thread: io_context; CDI writes go to the worker pool. Lifetime: references outlive the handler.
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/config/opaque_config.hpp"
#include "agent/claims/claim/rollback_report.hpp"
#include "agent/drivers/domain_pipeline.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "cdi/device_edits.hpp"
#include "cdi/spec_store.hpp"

namespace nvdra::k8s { class ApiServer; }
namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

struct HostManagedPlan;

struct ComputeDomainClaimOptions {
  bool host_managed = false;    // the HostManagedIMEX gate; off: channel claims fail, saying why
  int64_t channel_major = 0;    // nvidia-caps-imex-channels
  std::string clique_id;        // this node's NVLink clique; "" fails prepare (permanent)
  std::string clique_problem;   // why NVML could not tell the clique, when it could not
  claims::ConfigGates gates;
  claims::RollbackFailed on_rollback_failed;  // a failed prepare's rollback failed too (issue #30)
};

// Extra admission for new prepares (the --imex-check=enforce policy); empty: always allowed.
using PrepareGate = std::function<Status()>;

class ComputeDomainClaimHandler final : public kubelet::ClaimHandler {
 public:
  // `api` may be null (no API server configured): prepares then fail with a clear error.
  ComputeDomainClaimHandler(runtime::WorkerPool& pool, std::shared_ptr<k8s::ApiServer> api,
                            claims::CheckpointCommitter& committer, cdi::SpecStore& specs,
                            ComputeDomainClaimOptions options, PrepareGate gate = {});

  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;

  // Start-up, before serving kubelet: claims that started but never completed lose their CDI spec
  // and checkpoint entry (nothing else was done for them). Returns the per-claim errors.
  boost::asio::awaitable<std::vector<Error>> recover();

  const std::string& clique_id() const { return options_.clique_id; }
  const std::string& clique_problem() const { return options_.clique_problem; }
  // The node's clique as re-read (follow_clique): used by the prepares that start from now on.
  void set_clique(std::string id) {
    options_.clique_id = std::move(id);
    options_.clique_problem.clear();
  }

 private:
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare_new(kubelet::ClaimRef claim);
  // Steps 5–7 and --imex-check: what the node and the API say about a planned claim.
  boost::asio::awaitable<Status> admit(const HostManagedPlan& plan, const kubelet::ClaimRef& claim);
  boost::asio::awaitable<Status> find_domain(const std::string& uid, const kubelet::ClaimRef& claim);
  // Removes the CDI spec, then the checkpoint entry.
  boost::asio::awaitable<Status> forget(const kubelet::ClaimRef& claim);

  std::shared_ptr<k8s::ApiServer> api_;
  claims::CheckpointCommitter& committer_;
  ComputeDomainClaimOptions options_;
  PrepareGate gate_;
  DomainClaimBook book_;
  DomainSteps steps_;  // the claim spec
};

}  // namespace nvdra::drivers
