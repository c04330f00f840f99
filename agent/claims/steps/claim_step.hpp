#pragma once
// agent/claims/steps/ — the prepare pipeline of a claim and its steps (issue #31).
//
// A prepare is a list of steps, one per kind of side effect (a FabricManager partition, a DynamicMIG
// device, a VFIO hand-over, a time slice, a compute mode, an MPS daemon, metadata files, the CDI
// spec). Each step is a type in its own file with one small interface, ClaimStep<Claim>:
//   plan     pure: reads the claim's plan, may refuse the claim (nothing is recorded yet);
//   apply    the side effect, after PrepareStarted is recorded; owns its crash points;
//   undo     idempotent: undoing what never ran is a no-op;
//   recover  start-up, from the claim's checkpoint entry: brings the node back in line with it;
//   needs_record  whether apply, for this claim, leaves on the node what start-up can find and undo
//            only through the claim's PrepareStarted entry (a MIG device, a time slice, a daemon).
// run_pipeline (step_pipeline.hpp) plans every step, records PrepareStarted (on disk first only when a
// step needs the record), applies them in order and commits PrepareCompleted; a failure undoes the
// applied steps (the failed one included: it may have gone half-way) in reverse. `Claim` is the per-claim state the steps of one driver share
// (gpu_prepare.hpp for gpu.nvidia.com). May use agent/base and agent/claims' own headers; nothing
// above agent/claims.
#include <boost/asio/awaitable.hpp>

#include <string_view>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::claims::steps {

template <class Claim>
class ClaimStep {
 public:
  virtual ~ClaimStep() = default;
  // For logs and errors ("time-slice", "mps-daemon").
  virtual std::string_view name() const = 0;
  virtual Status plan(Claim& claim) const = 0;
  virtual boost::asio::awaitable<Status> apply(Claim& claim) = 0;
  virtual boost::asio::awaitable<Status> undo(Claim& claim) = 0;
  virtual boost::asio::awaitable<Status> recover(Claim& claim) = 0;
  // After plan. True unless the step says otherwise: a step that does not say keeps the record durable.
  virtual bool needs_record(const Claim&) const { return true; }
};

// The steps of a driver's prepare, in apply order (the one line a new step adds).
template <class Claim>
using StepList = std::vector<ClaimStep<Claim>*>;

}  // namespace nvdra::claims::steps
