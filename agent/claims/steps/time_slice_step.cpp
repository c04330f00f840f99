// Time-slice step: nvidia-smi sets a time-sliced group's GPUs to its interval at prepare, and back
// to the default at unprepare unless another prepared claim still time-slices the GPU (consumable
// shares). Owns <area>.prepare.after-timeslice-set and <area>.unprepare.after-timeslice-reset.
// Start-up: the setting lives in the GPU, a PrepareStarted claim is undone; a taken-over claim
// (kAdopt) records the setting its plan made.
#include <algorithm>

#include "agent/base/crash_point.hpp"
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

// Full GPUs another completed claim still time-slices (consumable shares): their slice stays.
std::vector<std::string> time_sliced_elsewhere(const Checkpoint& checkpoint, const std::string& uid) {
  std::vector<std::string> out;
  for (const auto& [other, entry] : checkpoint.claims) {
    if (other == uid || entry.state != ClaimState::kPrepareCompleted) continue;
    auto groups = decode_prepared_groups(entry.prepared_devices, other);
    if (!groups) continue;
    for (const auto& g : *groups)
      if (g.time_slice_applied)
        for (const auto& d : g.devices)
          if (d.type == DeviceType::kGpu) out.push_back(d.uuid);
  }
  return out;
}

class TimeSliceStep final : public GpuStep {
 public:
  std::string_view name() const override { return "time-slice"; }
  Status plan(GpuPrepare&) const override { return {}; }  // plan_sharing checked the interval

  // The time slice lives in the GPU: start-up resets it by the entry.
  bool needs_record(const GpuPrepare& c) const override { return plans_sharing(c, SharingKind::kTimeSlicing); }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    if (!plans_sharing(c, SharingKind::kTimeSlicing)) co_return Status{};
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      for (std::size_t g = 0; g < c.groups->size(); ++g) {
        const auto& group = (*c.groups)[g];
        if (group.plan.kind != SharingKind::kTimeSlicing || group.gpu_uuids.empty()) continue;
        if (auto st = c.node.smi.set_time_slice(group.gpu_uuids, group.plan.time_slice); !st) return st;
        crash_point(area, "prepare.after-timeslice-set");
        c.prepared[g].time_slice_applied = true;
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    // Most unprepares time-sliced nothing: no look through every other claim for those.
    if (std::none_of(c.undo.begin(), c.undo.end(), [](const auto& g) { return g.time_sliced; })) co_return Status{};
    const auto keep = time_sliced_elsewhere(c.node.committer.current(), c.claim.uid);
    co_return co_await c.node.pool.run([&c, &keep, area = c.area]() -> Status {
      for (const auto& g : c.undo) {
        if (!g.time_sliced) continue;
        std::vector<std::string> reset;
        for (const auto& u : g.gpu_uuids)
          if (std::find(keep.begin(), keep.end(), u) == keep.end()) reset.push_back(u);
        if (!reset.empty())
          if (auto s = c.node.smi.set_time_slice(reset, kDefaultTimeSlice); !s) return s;
        crash_point(area, "unprepare.after-timeslice-reset");
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> recover(GpuPrepare& c) override {
    if (c.recovery->pass != RecoveryPass::kAdopt) co_return Status{};
    for (std::size_t g = 0; g < c.groups->size(); ++g) {
      const auto& group = (*c.groups)[g];
      c.prepared[g].time_slice_applied = group.plan.kind == SharingKind::kTimeSlicing && !group.gpu_uuids.empty();
    }
    co_return Status{};
  }
};

}  // namespace

GpuStep& time_slice_step() {
  static TimeSliceStep step;
  return step;
}

}  // namespace nvdra::claims
