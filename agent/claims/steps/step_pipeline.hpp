#pragma once
// run_pipeline — a prepare as its list of steps (claim_step.hpp): plan every step, record
// PrepareStarted (on disk first when a step needs the record), apply the steps in order, commit
// PrepareCompleted. A failing apply undoes the steps applied so far, the failed one first, in
// reverse; the error returned is the apply's (what kubelet gets), an undo's failure goes to
// on_rollback_failed. recover_steps walks the same list at start-up. Runs on the caller's executor;
// every step's blocking work is its own to move off it.
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <optional>

#include "agent/claims/steps/claim_step.hpp"

namespace nvdra::claims::steps {

template <class Claim>
struct PipelineHooks {
  // PrepareStarted for the claim; `durable`: it must be on disk before any step applies (a step
  // needs the record, needs_record). Otherwise it may stay in memory until PrepareCompleted writes
  // the claim: what the steps leave meanwhile is found at start-up without it.
  std::function<boost::asio::awaitable<Status>(Claim&, bool durable)> started;
  // Durable PrepareCompleted for the claim (the checkpoint commit).
  std::function<boost::asio::awaitable<Status>(Claim&)> completed;
  // The rollback of a failed apply failed too: told here, the apply's error is still the answer.
  std::function<void(Claim&, const Error&)> on_rollback_failed;
  // Set by a driver whose undo order is fixed elsewhere (upstream's unprepare order): replaces the
  // reverse walk of the applied steps as the rollback of a failed apply.
  std::function<boost::asio::awaitable<Status>(Claim&)> rollback;
};

template <class Claim>
Status plan_steps(const StepList<Claim>& steps, Claim& claim) {
  for (auto* step : steps)
    if (auto st = step->plan(claim); !st) return st;
  return {};
}

// Undoes steps[0, count) in reverse; the first error is kept, the remaining steps are still undone.
template <class Claim>
boost::asio::awaitable<Status> undo_steps(const StepList<Claim>& steps, std::size_t count, Claim& claim) {
  Status first;
  for (std::size_t i = count; i-- > 0;)
    if (auto st = co_await steps[i]->undo(claim); !st && first) first = st;
  co_return first;
}

template <class Claim>
boost::asio::awaitable<Status> apply_steps(const StepList<Claim>& steps, Claim& claim,
                                           const PipelineHooks<Claim>& hooks) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Status st = co_await steps[i]->apply(claim);
    if (st) continue;
    Status undone = hooks.rollback ? co_await hooks.rollback(claim) : co_await undo_steps(steps, i + 1, claim);
    if (!undone && hooks.on_rollback_failed) hooks.on_rollback_failed(claim, undone.error());
    co_return st;
  }
  co_return Status{};
}

// Whether any step, as planned for this claim, needs its PrepareStarted entry durable before it applies.
template <class Claim>
bool needs_record(const StepList<Claim>& steps, const Claim& claim) {
  for (auto* step : steps)
    if (step->needs_record(claim)) return true;
  return false;
}

template <class Claim>
boost::asio::awaitable<Status> run_pipeline(const StepList<Claim>& steps, Claim& claim,
                                            const PipelineHooks<Claim>& hooks) {
  if (auto st = plan_steps(steps, claim); !st) co_return st;
  if (hooks.started)
    if (auto st = co_await hooks.started(claim, needs_record(steps, claim)); !st) co_return st;
  if (auto st = co_await apply_steps(steps, claim, hooks); !st) co_return st;
  if (hooks.completed)
    if (auto st = co_await hooks.completed(claim); !st) co_return st;
  co_return Status{};
}

// Start-up: every step recovers the claim from its checkpoint record, in apply order; the first
// error is kept and the rest still run.
template <class Claim>
boost::asio::awaitable<Status> recover_steps(const StepList<Claim>& steps, Claim& claim) {
  Status first;
  for (auto* step : steps)
    if (auto st = co_await step->recover(claim); !st && first) first = st;
  co_return first;
}

}  // namespace nvdra::claims::steps
