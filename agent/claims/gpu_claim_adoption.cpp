// GpuClaimHandler::adopt — take-over: a lost checkpoint entry (a corrupt checkpoint was moved aside)
// rebuilt from the API's allocation and the node as it is, by the steps' recover (kAdopt,
// steps/gpu_recovery.hpp): each records what its prepare made. Nothing here has a side effect on
// the GPUs.
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"

namespace nvdra::claims {

boost::asio::awaitable<Status> GpuClaimHandler::adopt(kubelet::ClaimRef claim) {
  auto allocation = co_await source_.get(claim);
  if (!allocation) co_return allocation.error();
  if (allocation->uid != claim.uid) {
    Error e = make_error(ErrorCode::kFailedPrecondition,
                         "UID mismatch: the CDI spec has " + claim.uid + ", the API " + allocation->uid);
    e.claim = claim.describe();
    co_return e;
  }
  auto groups = plan_claim(*allocation, claim);
  if (!groups) co_return groups.error();
  const GpuRecovery recovery{RecoveryPass::kAdopt, nullptr, nullptr};
  GpuPrepare taken{*services_, claim, {}};
  taken.allocation = &*allocation, taken.groups = &*groups, taken.recovery = &recovery;
  taken.prepared.resize(groups->size());
  for (auto* step : gpu_prepare_steps())
    if (auto st = co_await step->recover(taken); !st) co_return st;
  CheckpointedClaim entry{ClaimState::kPrepareCompleted, encode_claim_status(*allocation),
                          encode_prepared_groups(taken.prepared), claim.name, claim.namespace_name, {}};
  if (auto st = co_await committer_.commit_one(claim.uid, std::move(entry)); !st) {
    Error e = st.error();
    e.claim = claim.describe();
    co_return e;
  }
  co_return Status{};
}

}  // namespace nvdra::claims
