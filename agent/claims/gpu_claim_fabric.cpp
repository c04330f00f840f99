// GpuClaimHandler's FabricManager start-up: every checkpointed claim with a readable status goes
// through the FM partition step's recover (steps/fabric_partition_step.cpp), which holds the
// partitions recomputed from the entry's recorded status — its GPUs and fabricTopologyConfig, the
// intent written before any activation.
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"

namespace nvdra::claims {

boost::asio::awaitable<void> GpuClaimHandler::adopt_fabric(RecoveryReport& report) {
  if (!options_.fabric) co_return;
  for (const auto& [uid, entry] : committer_.current().claims) {
    auto allocation = decode_claim_status(entry.status, uid);
    if (!allocation) continue;  // an entry without a readable status cannot have activated anything
    kubelet::ClaimRef claim{entry.ns, entry.name, uid};
    auto groups = plan_claim(*allocation, claim);
    if (!groups) continue;
    GpuPrepare checkpointed{*services_, claim, {}};
    checkpointed.allocation = &*allocation, checkpointed.groups = &*groups;
    if (auto st = co_await fabric_partition_step().recover(checkpointed); !st) report.errors.push_back(st.error());
  }
}

}  // namespace nvdra::claims
