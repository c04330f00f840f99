#pragma once
// The compute-domain driver's claims (channel and daemon, both IMEX modes) on the claims' step pipeline
// (agent/claims/steps/step_pipeline.hpp): a prepare is `DomainPrepare` plus the mode's list of steps,
// and DomainClaimBook holds the bookkeeping both modes' handlers share — the PrepareStarted and
// PrepareCompleted commits, the claim CDI spec step, the unprepare's spec removal and entry erase, and
// the start-up sweep of entries that never completed. Crash points stay each mode's own (their literal
// names are what crash_points.txt lists): the mode hands its DomainCrashPoints in.
//
// Thread: io_context; file work goes to the worker pool. Lifetime: references outlive the book.
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/step_pipeline.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "cdi/spec_builder.hpp"
#include "cdi/spec_store.hpp"

namespace nvdra::runtime { class WorkerPool; }
namespace nvdra::k8s {
class ApiServer;
struct ClaimAllocation;
}  // namespace nvdra::k8s

namespace nvdra::drivers {

// How long one prepare may wait for the ComputeDomain watches, and how that was decided (for errors).
struct WaitBound {
  std::chrono::steady_clock::time_point until;
  std::string why;
};

// One compute-domain claim being prepared: what its steps share.
struct DomainPrepare {
  kubelet::ClaimRef claim;
  std::string domain_id;
  claims::CheckpointedClaim entry;        // written PrepareStarted, then PrepareCompleted
  std::vector<cdi::NamedEdits> edits;     // the claim spec's devices; none: no spec (upstream's rule)
  std::vector<std::string> ids;           // CDI ids of the answer: fixed ones first, then the spec's
  WaitBound bound;                        // driver-managed waits
  // The checkpoint groups of the completed claim, from its answer's device ids.
  std::function<boost::json::array(const std::vector<std::string>& ids)> encode;
};

using DomainStep = claims::steps::ClaimStep<DomainPrepare>;
using DomainSteps = claims::steps::StepList<DomainPrepare>;

// Each mode's crash points around the shared bookkeeping (null: none there).
struct DomainCrashPoints {
  void (*after_started)() = nullptr;
  void (*after_spec_write)() = nullptr;
  void (*after_completed)() = nullptr;
  void (*after_spec_remove)() = nullptr;
  void (*after_erase)() = nullptr;
};

class DomainClaimBook {
 public:
  DomainClaimBook(runtime::WorkerPool& pool, claims::CheckpointCommitter& committer, cdi::SpecStore& specs,
                  DomainCrashPoints points);
  ~DomainClaimBook();

  // started: PrepareStarted made durable; completed: the PrepareCompleted entry from `encode`.
  claims::steps::PipelineHooks<DomainPrepare> hooks();
  // Writes the claim spec from DomainPrepare::edits (none: nothing) and adds its ids; undo removes it.
  DomainStep& spec_step();
  // Unprepare's tail: the claim's CDI spec, then its checkpoint entry. Errors name the claim.
  boost::asio::awaitable<Status> forget(const kubelet::ClaimRef& claim);
  // Start-up: every entry that never completed goes through `forget` (the mode's); per-claim errors.
  boost::asio::awaitable<std::vector<Error>> recover(
      const std::function<boost::asio::awaitable<Status>(kubelet::ClaimRef)>& forget);
  // Runs the pipeline and answers with the claim's one device.
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> run(
      const DomainSteps& steps, DomainPrepare& c, const claims::steps::PipelineHooks<DomainPrepare>& hooks,
      kubelet::PreparedDevice device);

  claims::CheckpointCommitter& committer() { return committer_; }
  runtime::WorkerPool& pool() { return pool_; }

 private:
  class SpecStep;
  runtime::WorkerPool& pool_;
  claims::CheckpointCommitter& committer_;
  cdi::SpecStore& specs_;
  DomainCrashPoints points_;
  std::unique_ptr<SpecStep> spec_step_;
};

// The claim's allocation for compute-domain.nvidia.com, read from the API (`api` null: no API server is
// configured, said so). Errors name the claim.
boost::asio::awaitable<Result<k8s::ClaimAllocation>> read_domain_allocation(k8s::ApiServer* api,
                                                                            const kubelet::ClaimRef& claim);

// PrepareStarted entry of a claim (its recorded allocation status, name and namespace).
claims::CheckpointedClaim started_entry(const kubelet::ClaimRef& claim, const boost::json::value& status);

}  // namespace nvdra::drivers
