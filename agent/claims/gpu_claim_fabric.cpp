// GpuClaimHandler's FabricManager start-up (a claim's partitions are the step's:
// steps/fabric_partition_step.cpp): which checkpointed claims hold which partitions, recomputed
// from each entry's recorded status — its GPUs and fabricTopologyConfig — the intent written
// before any activation.
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
    auto plan = fabric_plan(*services_, uid, *groups);
    if (!plan) {
      report.errors.push_back(Error{plan.error().code, "fabric partitions of a checkpointed claim: " + plan.error().message,
                                    claim.describe(), plan.error().field});
      continue;
    }
    options_.fabric->adopt(uid, std::move(*plan));
  }
}

}  // namespace nvdra::claims
