// Compute-mode step: an MPS group's full GPUs go to EXCLUSIVE_PROCESS before its daemon starts and
// back to DEFAULT once it is stopped. Owns <area>.prepare.after-compute-mode and
// <area>.unprepare.after-compute-mode. Nothing at start-up: a PrepareStarted claim is undone.
#include "agent/base/crash_point.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

class ComputeModeStep final : public GpuStep {
 public:
  std::string_view name() const override { return "compute-mode"; }
  Status plan(GpuPrepare&) const override { return {}; }

  // The compute mode lives in the GPU: start-up resets it by the entry.
  bool needs_record(const GpuPrepare& c) const override { return plans_sharing(c, SharingKind::kMps); }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    if (!plans_sharing(c, SharingKind::kMps)) co_return Status{};
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      for (const auto& group : *c.groups) {
        if (group.plan.kind != SharingKind::kMps) continue;
        if (!group.gpu_uuids.empty())
          if (auto st = c.node.smi.set_compute_mode(group.gpu_uuids, "EXCLUSIVE_PROCESS"); !st) return st;
        crash_point(area, "prepare.after-compute-mode");
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    if (!undoes_mps_daemon(c)) co_return Status{};
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      for (const auto& g : c.undo) {
        if (g.mps_daemon_id.empty()) continue;
        if (!g.gpu_uuids.empty())
          if (auto s = c.node.smi.set_compute_mode(g.gpu_uuids, "DEFAULT"); !s) return s;
        crash_point(area, "unprepare.after-compute-mode");
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> recover(GpuPrepare&) override { co_return Status{}; }
};

}  // namespace

GpuStep& compute_mode_step() {
  static ComputeModeStep step;
  return step;
}

}  // namespace nvdra::claims
