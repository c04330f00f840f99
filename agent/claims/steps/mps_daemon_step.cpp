// MPS daemon step: an MPS group gets its control daemon (MpsControl: child process or systemd
// transient unit) with the group's limits at prepare, stopped at unprepare. Owns
// <area>.prepare.after-daemon-limits and <area>.unprepare.after-daemon-stop (after-daemon-start is
// the MpsControl's). Start-up: a PrepareStarted claim is undone, a completed one's daemon runs on; a
// taken-over claim (kAdopt) records its daemon's id.
#include "agent/base/crash_point.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

class MpsDaemonStep final : public GpuStep {
 public:
  std::string_view name() const override { return "mps-daemon"; }
  // Upstream: multi-user MPS needs compute capability 7.0 on every full GPU of the group.
  Status plan(GpuPrepare& c) const override {
    for (const auto& group : *c.groups)
      if (group.plan.kind == SharingKind::kMps && group.plan.mps.multi_user)
        for (const auto* d : group.devices)
          if (d->type == DeviceType::kGpu && d->cuda_cc_major < 7)
            return make_error(ErrorCode::kFailedPrecondition,
                              "multiuser mode was requested but is not supported: device " + d->name +
                                  " has compute capability " + std::to_string(d->cuda_cc_major) + ".x, needs >= 7.0");
    return {};
  }

  // A daemon (process or unit) runs for the claim: start-up stops it by the entry.
  bool needs_record(const GpuPrepare& c) const override { return plans_sharing(c, SharingKind::kMps); }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    if (!plans_sharing(c, SharingKind::kMps)) co_return Status{};
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
    if (!undoes_mps_daemon(c)) co_return Status{};
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      for (const auto& g : c.undo) {
        if (g.mps_daemon_id.empty()) continue;
        if (auto s = c.node.mps.stop(c.node.mps_daemon(g.mps_daemon_id, g.uuids, g.mps)); !s) return s;
        crash_point(area, "unprepare.after-daemon-stop");
      }
      return {};
    });
  }

  boost::asio::awaitable<Status> recover(GpuPrepare& c) override {
    if (c.recovery->pass != RecoveryPass::kAdopt) co_return Status{};
    for (std::size_t g = 0; g < c.groups->size(); ++g)
      if ((*c.groups)[g].plan.kind == SharingKind::kMps)
        c.prepared[g].mps_daemon_id = mps_daemon_id(c.claim.uid, (*c.groups)[g].uuids);
    co_return Status{};
  }
};

}  // namespace

GpuStep& mps_daemon_step() {
  static MpsDaemonStep step;
  return step;
}

}  // namespace nvdra::claims
