// GpuClaimHandler's unprepare half: undoing a claim's side effects (also the rollback of a failed
// prepare), removing its CDI spec and its checkpoint entry. Prepare is in gpu_claim_handler.cpp.
#include <algorithm>
#include <set>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/gpu_claim_support.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"

namespace nvdra::claims {

using namespace handler_detail;

boost::asio::awaitable<Status> GpuClaimHandler::unprepare(kubelet::ClaimRef claim) {
  const auto& claims = committer_.current().claims;
  auto it = claims.find(claim.uid);
  if (it == claims.end()) {
    // Unknown to the checkpoint; a spec file left by a crash before the entry was written (or by
    // an upstream plugin) still goes, so unprepare leaves nothing of the claim behind.
    Status st = co_await pool_.run([&] { return specs_.remove_claim(cdi::kGpuVendor, claim.uid); });
    if (!st) co_return for_claim(st.error(), claim);
    co_return Status{};
  }
  auto undo = undo_groups(claim.uid, it->second);
  if (!undo) co_return undo.error();
  co_return co_await undo_claim(std::move(claim), std::move(*undo));
}

Result<std::vector<UndoGroup>> GpuClaimHandler::undo_groups(const std::string& uid,
                                                                             const CheckpointedClaim& entry) const {
  kubelet::ClaimRef claim{entry.ns, entry.name, uid};
  std::vector<UndoGroup> out;
  if (entry.state == ClaimState::kPrepareCompleted) {
    auto groups = decode_prepared_groups(entry.prepared_devices, claim.describe());
    if (!groups) return groups.error();
    for (const auto& g : *groups) {
      UndoGroup u;
      for (const auto& d : g.devices) {
        u.uuids.push_back(d.uuid);
        if (d.type == DeviceType::kGpu) u.gpu_uuids.push_back(d.uuid);
        const auto* inv = inventory_.find(d.device);
        // A share's MIG device goes with its last share (upstream skips the deletion while another
        // completed claim uses the device).
        if (d.type == DeviceType::kMig && inv && inv->dynamic && !mig_used_elsewhere(d.device, uid))
          u.migs.push_back(MigUndo{inv, std::pair{d.gi_id, d.ci_id}});
        if (d.type == DeviceType::kVfio && inv) u.vfio.push_back(inv);
      }
      u.time_sliced = g.time_slice_applied;
      u.mps_daemon_id = g.mps_daemon_id;
      out.push_back(std::move(u));
    }
    return out;
  }
  // PrepareStarted: redo the plan from the recorded status; undoing a step that never ran is a no-op.
  auto allocation = decode_claim_status(entry.status, uid);
  if (!allocation) return allocation.error();
  auto groups = plan_claim(*allocation, claim);
  if (!groups) return out;  // the plan failed before any side effect could have happened
  for (const auto& g : *groups) out.push_back(undo_of(g, uid, {}));
  return out;
}

bool GpuClaimHandler::mig_used_elsewhere(const std::string& device, const std::string& uid) const {
  for (const auto& [other, entry] : committer_.current().claims) {
    if (other == uid || entry.state != ClaimState::kPrepareCompleted) continue;
    auto groups = decode_prepared_groups(entry.prepared_devices, other);
    // An entry that cannot be read may hold it too when devices are shared (consumable shares): then it
    // is not destroyed on a guess. Without shares no two claims hold one MIG device.
    if (!groups) {
      if (options_.consumable_shares) return true;
      continue;
    }
    for (const auto& g : *groups)
      for (const auto& d : g.devices)
        if (d.device == device) return true;
  }
  return false;
}

UndoGroup GpuClaimHandler::undo_of(const PlannedGroup& g, const std::string& uid,
                                                    const std::map<std::string, nvml::MigDeviceInfo>& created) const {
  UndoGroup u{g.gpu_uuids, g.uuids, g.plan.kind == SharingKind::kTimeSlicing,
              g.plan.kind == SharingKind::kMps ? mps_daemon_id(uid, g.uuids) : "", g.plan.mps, {}, {}};
  for (const auto* d : g.devices) {
    if (d->type == DeviceType::kVfio) u.vfio.push_back(d);
    if (!d->dynamic) continue;
    if (auto it = created.find(d->name); it != created.end())
      u.migs.push_back(MigUndo{d, std::pair{it->second.gi_id, it->second.ci_id}});
    else if (!mig_used_elsewhere(d->name, uid))  // upstream: unless a completed claim uses it
      u.migs.push_back(MigUndo{d, std::nullopt});
  }
  return u;
}

std::string_view GpuClaimHandler::area_of(const std::vector<UndoGroup>& groups) const {
  ClaimKind kind;
  for (const auto& g : groups) {
    kind.dynamic_mig |= !g.migs.empty();
    kind.mps |= !g.mps_daemon_id.empty();
    kind.time_sliced |= g.time_sliced && !g.gpu_uuids.empty();
    kind.mig |= g.uuids.size() > g.gpu_uuids.size();
    kind.vfio |= !g.vfio.empty();
  }
  return kind.area(mps_);
}

// The steps undone in upstream's unprepare order (steps/gpu_step_list.cpp), the first failure
// keeping the entry (kubelet retries), then the entry erased.
boost::asio::awaitable<Status> GpuClaimHandler::undo_claim(kubelet::ClaimRef claim, std::vector<UndoGroup> groups) {
  GpuPrepare undo{*services_, claim, area_of(groups)};
  undo.undo = std::move(groups);
  const std::string_view area = undo.area;
  for (auto* step : gpu_undo_steps())
    if (auto st = co_await step->undo(undo); !st) co_return for_claim(st.error(), claim);
  if (auto c = co_await committer_.commit_one(claim.uid, std::nullopt); !c)
    co_return for_claim(c.error(), claim);
  crash_point(area, "unprepare.after-erase");  // durable, kubelet not yet answered
  if (options_.on_devices_changed) options_.on_devices_changed();
  co_return Status{};
}

}  // namespace nvdra::claims
