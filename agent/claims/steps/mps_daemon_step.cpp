// MPS daemon step: an MPS group gets its control daemon (MpsControl: child process or systemd
// transient unit) with the group's limits at prepare, stopped at unprepare. Owns
// <area>.prepare.after-daemon-limits and <area>.unprepare.after-daemon-stop (after-daemon-start is
// the MpsControl's). Nothing at start-up: a PrepareStarted claim is undone.
#include "agent/base/crash_point.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

class MpsDaemonStep final : public GpuStep {
 public:
  std::string_view name() const override { return "mps-daemon"; }
  Status plan(GpuPrepare&) const override { return {}; }  // plan_claim refuses multi-user MPS below CC 7.0

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      for (std::size_t g = 0; g < c.groups->size(); ++g) {
        const auto& group = (*c.groups)[g];
        if (group.plan.kind != SharingKind::kMps) continue;
        auto daemon = c.node.mps_daemon(mps_daemon_id(c.claim.uid, group.uuids), group.uuids, group.plan.mps);
        c.prepared[g].mps_daemon_id = daemon.id;
        if (auto st = c.node.mps.start(daemon); !st) return st;
        crash_point(area, "prepare.after-daemon-limits");
        c.daemons[g] = std::move(daemon);
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      for (const auto& g : c.undo) {
        if (g.mps_daemon_id.empty()) continue;
        if (auto s = c.node.mps.stop(c.node.mps_daemon(g.mps_daemon_id, g.uuids, g.mps)); !s) return s;
        crash_point(area, "unprepare.after-daemon-stop");
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> recover(GpuPrepare&) override { co_return Status{}; }
};

}  // namespace

GpuStep& mps_daemon_step() {
  static MpsDaemonStep step;
  return step;
}

}  // namespace nvdra::claims
