// GpuClaimHandler's first start-up walk (kHold, steps/gpu_recovery.hpp): every checkpointed claim
// with a readable status goes through the steps' recover, planned from the entry's recorded status —
// its GPUs and fabricTopologyConfig, the intent written before any activation — so that what it
// holds (its FM partitions: steps/fabric_partition_step.cpp) no other claim takes.
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"

namespace nvdra::claims {

boost::asio::awaitable<void> GpuClaimHandler::adopt_fabric(RecoveryReport& report) {
  if (!options_.fabric) co_return;  // only the FM step holds anything: without FM, no plan is needed
  const GpuRecovery recovery{RecoveryPass::kHold, &report, nullptr};
  for (const auto& [uid, entry] : committer_.current().claims) {
    auto allocation = decode_claim_status(entry.status, uid);
    if (!allocation) continue;  // an entry without a readable status cannot have activated anything
    kubelet::ClaimRef claim{entry.ns, entry.name, uid};
    auto groups = plan_claim(*allocation, claim);
    if (!groups) continue;
    GpuPrepare checkpointed{*services_, claim, {}};
    checkpointed.allocation = &*allocation, checkpointed.groups = &*groups, checkpointed.recovery = &recovery;
    for (auto* step : gpu_prepare_steps())
      if (auto st = co_await step->recover(checkpointed); !st) report.errors.push_back(st.error());
  }
}

}  // namespace nvdra::claims
