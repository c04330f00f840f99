#pragma once
// DriverManagedClaimHandler — compute-domain.nvidia.com claims in upstream's default driver-managed
// IMEX mode (upstream-driver.md §9.4, §5.2), behind kubelet::ClaimHandler (see its contract).
//
// Daemon claims (device daemon-0, ComputeDomainDaemonConfig{domainID}): the ComputeDomain must be
// known → PrepareStarted → <plugin dir>/domains/<uid>/ (0755) with imexd.cfg.tmpl (0644) → CDI spec
// (CLIQUE_ID, COMPUTE_DOMAIN_{UUID,NAME,NAMESPACE}, /imexd bind mount, the fabric-imex-mgmt node
// when the node has a clique) → PrepareCompleted; answered with ".../device=all" and the claim's id.
// Channel claims (channel-0, ComputeDomainChannelConfig), upstream's order: channel 0 not held by
// another completed claim → the ComputeDomain exists in the claim's namespace → PrepareStarted →
// node label resource.nvidia.com/computeDomain=<uid> (refused when another domain holds it) → this
// node's daemon Ready (ComputeDomainClique, or the ComputeDomain's status.nodes) → no clique: no
// device (and a Warning Event on the claim) → CDI spec with channel 0 (or all channels for
// allocationMode All) → PrepareCompleted. Both run on the claims' step pipeline (domain_pipeline.hpp,
// domain_steps.hpp); a failed try is not rolled back (kubelet prepares again over it). Readiness comes from ComputeDomainCache's watches: a prepare
// waits for the next change until shortly before kubelet's deadline for the call (`readiness_wait`
// when the call has none), and never holds anything another claim needs.
// Unprepare: the node label (a channel's, only when it names the claim's domain), the CDI spec, the
// entry. A domain directory goes when the cache sees its ComputeDomain deleted and no prepared daemon
// claim names it. Entries of host-managed mode (channel form, no label) unprepare the same way.
//
// Thread: io_context; file work goes to the worker pool. Lifetime: references outlive the handler.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/config/opaque_config.hpp"
#include "agent/drivers/domain_cache.hpp"
#include "agent/drivers/domain_groups.hpp"
#include "agent/drivers/domain_pipeline.hpp"
#include "agent/drivers/domain_steps.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "cdi/nvidia_caps.hpp"
#include "cdi/spec_builder.hpp"
#include "cdi/spec_store.hpp"

namespace nvdra::k8s {
class ApiServer;
class EventRecorder;
struct ClaimAllocation;
}  // namespace nvdra::k8s
namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

class ComputeDomainCache;
class NodeLabels;
struct DomainClaimPlan;

struct DriverManagedOptions {
  int64_t channel_major = 0;   // nvidia-caps-imex-channels
  int64_t caps_major = 0;      // nvidia-caps (the fabric-imex-mgmt node), with a clique only
  cdi::CapNode fabric_mgmt;    // capabilities/fabric-imex-mgmt, with a clique only
  std::string clique_id;       // "" : channel claims get no device (upstream's answer)
  std::string plugin_dir;      // <kubelet-plugins-dir>/compute-domain.nvidia.com
  std::string pool;            // the node name
  bool use_cliques = true;     // gate ComputeDomainCliques
  // The readiness wait of a call without a deadline; a call's own deadline (kubelet's) bounds it otherwise.
  std::chrono::milliseconds readiness_wait{40000};
  claims::ConfigGates gates;
  // Set when a start-up check failed (driver too old for IMEXDaemonsWithDNSNames, no channel major, a
  // fabric error, no API server): every prepare fails with it and the driver publishes no device.
  std::string refusal;
  // Set while a GPU's NVLink fabric is still registering (the clique is not known yet): new claims fail
  // with it and the driver publishes no device until CliqueRefresh sees the fabric COMPLETED.
  std::string clique_pending;
};

class DriverManagedClaimHandler final : public kubelet::ClaimHandler {
 public:
  // `api` (claim reads) may be null: prepares then fail with a clear error. `events` may be null.
  DriverManagedClaimHandler(runtime::WorkerPool& pool, std::shared_ptr<k8s::ApiServer> api,
                            claims::CheckpointCommitter& committer, cdi::SpecStore& specs,
                            std::shared_ptr<ComputeDomainCache> cache, NodeLabels* labels, k8s::EventRecorder* events,
                            DriverManagedOptions options);

  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;
  // Start-up: entries that never completed are unprepared (label, CDI spec, entry).
  boost::asio::awaitable<std::vector<Error>> recover();
  const std::string& refusal() const { return options_.refusal; }
  const std::string& clique_pending() const { return options_.clique_pending; }
  const std::string& clique_id() const { return options_.clique_id; }
  // The node's clique as re-read (CliqueRefresh): used by the prepares that start from now on.
  void set_clique(std::string id, int64_t caps_major, cdi::CapNode fabric_mgmt) {
    options_.clique_id = std::move(id);
    options_.caps_major = caps_major;
    options_.fabric_mgmt = std::move(fabric_mgmt);
    options_.clique_pending.clear();
  }
  // The cache saw ComputeDomain `uid` deleted: its domain directory goes unless a daemon claim uses it.
  boost::asio::awaitable<void> domain_gone(std::string uid);
  // Once the watches have listed: domain directories of ComputeDomains that no longer exist go (what
  // upstream's 10-minute sweep does, here at start and then at each deletion).
  boost::asio::awaitable<void> sweep_domains();

 private:
  using Decided = DomainClaimPlan;
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare_new(kubelet::ClaimRef claim);
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare_daemon(const kubelet::ClaimRef& claim,
                                                                                      const Decided& d);
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare_channel(const kubelet::ClaimRef& claim,
                                                                                       const Decided& d);
  WaitBound wait_bound(const kubelet::ClaimRef& claim) const;
  boost::asio::awaitable<Status> check_domain(const std::string& uid, const kubelet::ClaimRef& claim,
                                              const WaitBound& bound);
  boost::asio::awaitable<Status> await_ready(const std::string& uid, const kubelet::ClaimRef& claim,
                                             const WaitBound& bound);
  boost::asio::awaitable<Status> await_synced(const WaitBound& bound);
  boost::asio::awaitable<std::optional<DomainInfo>> find_domain(const std::string& uid, const WaitBound& bound);
  DomainPrepare start_prepare(const kubelet::ClaimRef& claim, const Decided& d) const;
  // The claim's steps on the pipeline (domain_pipeline.hpp), answered with its one device.
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> run(const DomainSteps& steps,
                                                                           DomainPrepare& c, const Decided& d);
  void tell_no_clique(const DomainPrepare& c);
  boost::asio::awaitable<Status> forget(const kubelet::ClaimRef& claim);

  runtime::WorkerPool& pool_;
  std::shared_ptr<k8s::ApiServer> api_;
  claims::CheckpointCommitter& committer_;
  std::shared_ptr<ComputeDomainCache> cache_;
  NodeLabels* labels_;
  k8s::EventRecorder* events_;
  DriverManagedOptions options_;
  DomainClaimBook book_;  // the commits, the claim spec step, unprepare's tail
  DomainDirectoryStep directory_step_;
  NodeLabelStep label_step_;
  ReadinessStep readiness_step_;
  DomainSteps daemon_steps_;   // directory, claim spec
  DomainSteps channel_steps_;  // node label, readiness, claim spec
};

}  // namespace nvdra::drivers
