// VFIO hand-over step (PassthroughSupport): the claim's VFIO devices go from nvidia to vfio-pci at
// prepare, each waited for until one deadline per claim, and back at unprepare or rollback; the
// bound device's CDI edits are kept for the device edits step. Crash points vfio.prepare.* and
// vfio.unprepare.* are VfioStep's. Start-up: a PrepareStarted claim is undone (given back).
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"

namespace nvdra::claims {
namespace {

class VfioHandOverStep final : public GpuStep {
 public:
  std::string_view name() const override { return "vfio-hand-over"; }
  // A VFIO device and its GPU face are one PCI function: one claim's at a time (plan_claim refuses
  // VFIO devices without PassthroughSupport, as it cannot plan them).
  Status plan(GpuPrepare& c) const override {
    return check_twins_free(c.node.committer.current(), c.claim.uid, c.allocation->results, c.node.inventory);
  }

  // A GPU moved to vfio-pci: start-up gives it back to nvidia by the entry.
  bool needs_record(const GpuPrepare& c) const override { return plans_vfio(c); }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    auto* vfio = c.node.vfio;
    const auto deadline = vfio ? vfio->claim_deadline() : VfioStep::Deadline{};
    for (const auto& group : *c.groups)
      for (const auto* d : group.devices) {
        if (d->type != DeviceType::kVfio || !group.vfio) continue;
        auto cdev = co_await vfio->hand_over(*d, deadline);
        if (!cdev) co_return cdev.error();
        auto e = vfio->device_edits(*d, *group.vfio, *cdev);
        if (!e) co_return e.error();
        c.vfio_edits.emplace(d->name, std::move(*e));
      }
    co_return Status{};
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    if (!c.node.vfio) co_return Status{};
    for (const auto& g : c.undo)
      for (const auto* d : g.vfio)
        if (auto st = co_await c.node.vfio->give_back(*d); !st) co_return st;
    co_return Status{};
  }

  boost::asio::awaitable<Status> recover(GpuPrepare&) override { co_return Status{}; }
};

}  // namespace

GpuStep& vfio_hand_over_step() {
  static VfioHandOverStep step;
  return step;
}

}  // namespace nvdra::claims
