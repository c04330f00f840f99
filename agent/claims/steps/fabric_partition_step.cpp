// FabricManager partition step: the claim's FM partitions (FabricManagerPartitioning /
// FabricTopologySupport). plan picks them (a per-claim refusal: no match, overlap, differing
// fabricTopologyConfig blocks); the handler holds them right before PrepareStarted; apply activates
// them (crash points fm.prepare.*, in FabricPartitions); undo deactivates them after the CDI spec is
// gone (upstream's order); recover holds a checkpointed claim's partitions again (gpu_claim_fabric.cpp).
#include "agent/claims/steps/gpu_step_list.hpp"

namespace nvdra::claims {
namespace {

class FabricPartitionStep final : public GpuStep {
 public:
  std::string_view name() const override { return "fabric-partition"; }

  Status plan(GpuPrepare& c) const override {
    auto plan = fabric_plan(c.node, c.claim.uid, *c.groups);
    if (!plan) return plan.error();
    c.fabric = std::move(*plan);
    return {};
  }
  // FM gates on: the partitions are held until the entry is durable, and start-up adopts them by it.
  bool needs_record(const GpuPrepare& c) const override { return c.node.fabric != nullptr; }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    if (!c.node.fabric) co_return Status{};
    co_return co_await c.node.fabric->activate(c.claim, c.fabric);
  }
  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    if (!c.node.fabric) co_return Status{};
    co_return co_await c.node.fabric->release(c.claim);
  }
  // Start-up (and FM reached after start), for every checkpointed claim before any is undone: the
  // partitions its recorded status plans are held for it, so no other claim takes them.
  boost::asio::awaitable<Status> recover(GpuPrepare& c) override {
    if (!c.node.fabric || c.recovery->pass != RecoveryPass::kHold) co_return Status{};
    auto plan = fabric_plan(c.node, c.claim.uid, *c.groups);
    if (!plan)
      co_return Error{plan.error().code, "fabric partitions of a checkpointed claim: " + plan.error().message,
                      c.claim.describe(), plan.error().field};
    c.node.fabric->adopt(c.claim.uid, std::move(*plan));
    co_return Status{};
  }
};

}  // namespace

Result<FabricPlan> fabric_plan(const GpuServices& node, const std::string& uid, const std::vector<PlannedGroup>& groups) {
  if (!node.fabric) return FabricPlan{};
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
  return node.fabric->plan(uid, gpus, config);
}

GpuStep& fabric_partition_step() {
  static FabricPartitionStep step;
  return step;
}

}  // namespace nvdra::claims
