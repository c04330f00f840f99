// DynamicMIG device step: the claim's MIG devices are created at prepare (a consumable share uses
// the one another prepared claim holds) and destroyed at unprepare or rollback, first of all
// (upstream's order; a busy GPU fails the unprepare, the entry stays and kubelet retries). Crash
// points mig-dynamic.prepare.after-{mig-mode-on,gi-create,ci-create} are DynamicMig's; this step
// owns <area>.unprepare.after-mig-destroy. Start-up (dynamic_mig_recovery.cpp): recover recreates a
// completed claim's MIG devices found gone (kRepair; the orphans no claim owns are destroyed before
// the walk, node-wide) and reads a taken-over claim's MIG ids from the GPUs (kAdopt).
#include "agent/base/crash_point.hpp"
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"

namespace nvdra::claims {
namespace {

class DynamicMigStep final : public GpuStep {
 public:
  std::string_view name() const override { return "dynamic-mig"; }
  Status plan(GpuPrepare&) const override { return {}; }  // plan_claim refuses a DynamicMIG device without NVML

  // A MIG device made for the claim: start-up finds its ids by the entry.
  bool needs_record(const GpuPrepare& c) const override {
    for (const auto& group : *c.groups)
      for (const auto* d : group.devices)
        if (d->dynamic) return true;
    return false;
  }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    for (const auto& group : *c.groups)
      for (const auto* d : group.devices) {
        if (!d->dynamic) continue;
        if (auto live = c.node.shares.live_mig(c.node.committer.current(), c.claim.uid, d->name)) {
          nvml::MigDeviceInfo info;
          info.uuid = live->uuid, info.gi_id = live->gi_id, info.ci_id = live->ci_id;
          c.shared.emplace(d->name, std::move(info));
          continue;
        }
        auto mig = co_await c.node.dynamic_mig->create(*d);
        if (!mig) co_return mig.error();
        c.created.emplace(d->name, std::move(*mig));
      }
    co_return Status{};
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    const std::string_view area = c.area;
    bool any = false;
    for (const auto& g : c.undo)
      for (const auto& m : g.migs) {
        any = true;
        if (!c.node.dynamic_mig) break;
        Status st = m.ids ? co_await c.node.dynamic_mig->destroy(*m.device, m.ids->first, m.ids->second)
                          : co_await c.node.dynamic_mig->destroy_by_name(*m.device);
        if (st) continue;
        Error e = st.error();
        e.message = "destroying MIG device " + m.device->name + " of claim " + c.claim.describe() + ": " + e.message;
        if (e.code == ErrorCode::kUnavailable) e.message += " (the GPU is busy; kubelet retries the unprepare)";
        co_return e;
      }
    if (any) crash_point(area, "unprepare.after-mig-destroy");
    co_return Status{};
  }

  boost::asio::awaitable<Status> recover(GpuPrepare& c) override {
    if (!c.node.dynamic_mig) co_return Status{};
    if (c.recovery->pass == RecoveryPass::kRepair) co_return co_await recreate_missing_migs(c);
    if (c.recovery->pass == RecoveryPass::kAdopt) co_return co_await adopted_migs(c);
    co_return Status{};
  }
};

}  // namespace

GpuStep& dynamic_mig_step() {
  static DynamicMigStep step;
  return step;
}

}  // namespace nvdra::claims
