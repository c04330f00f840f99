// GpuClaimHandler's FabricManager helpers: which partitions a planned claim needs, and at start-up
// which checkpointed claims hold which partitions (recomputed from each entry's recorded status —
// its GPUs and fabricTopologyConfig — the intent written before any activation).
#include "agent/claims/gpu_claim_handler.hpp"

namespace nvdra::claims {

Result<FabricPlan> GpuClaimHandler::fabric_plan_of(const std::string& uid, const std::vector<PlannedGroup>& groups) const {
  if (!options_.fabric) return FabricPlan{};
  std::vector<std::string> gpus;
  std::optional<FabricTopologyConfig> config;
  for (const auto& g : groups) {
    gpus.insert(gpus.end(), g.fabric_gpus.begin(), g.fabric_gpus.end());
    if (!g.fabric) continue;
    if (config && *config != *g.fabric)
      return Error{ErrorCode::kInvalidArgument,
                   "the claim's devices carry different fabricTopologyConfig blocks; one claim gets one fabric "
                   "partition set, so give all its GPUs the same block",
                   {}, "fabricTopologyConfig"};
    config = g.fabric;
  }
  return options_.fabric->plan(uid, gpus, config);
}

boost::asio::awaitable<void> GpuClaimHandler::adopt_fabric(RecoveryReport& report) {
  if (!options_.fabric) co_return;
  for (const auto& [uid, entry] : committer_.current().claims) {
    auto allocation = decode_claim_status(entry.status, uid);
    if (!allocation) continue;  // an entry without a readable status cannot have activated anything
    kubelet::ClaimRef claim{entry.ns, entry.name, uid};
    auto groups = plan_claim(*allocation, claim);
    if (!groups) continue;
    auto plan = fabric_plan_of(uid, *groups);
    if (!plan) {
      report.errors.push_back(Error{plan.error().code, "fabric partitions of a checkpointed claim: " + plan.error().message,
                                    claim.describe(), plan.error().field});
      continue;
    }
    options_.fabric->adopt(uid, std::move(*plan));
  }
}

}  // namespace nvdra::claims
