// GpuClaimHandler::adopt — rebuilding a lost checkpoint entry (a corrupt checkpoint was moved
// aside) from the API's allocation and the node as it is. Kept apart from the prepare pipeline:
// nothing here has a side effect on the GPUs.
#include "agent/claims/gpu_claim_handler.hpp"

#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"

namespace nvdra::claims {

boost::asio::awaitable<Status> GpuClaimHandler::adopt(kubelet::ClaimRef claim) {
  auto fail = [&claim](ErrorCode code, std::string message) {
    Error e = make_error(code, std::move(message));
    e.claim = claim.describe();
    return e;
  };
  auto allocation = co_await source_.get(claim);
  if (!allocation) co_return allocation.error();
  if (allocation->uid != claim.uid)
    co_return fail(ErrorCode::kFailedPrecondition, "UID mismatch: the CDI spec has " + claim.uid + ", the API " +
                                                       allocation->uid);
  auto groups = plan_claim(*allocation, claim);
  if (!groups) co_return groups.error();
  std::vector<PreparedGroup> prepared(groups->size());
  for (std::size_t g = 0; g < groups->size(); ++g) {
    const auto& group = (*groups)[g];
    // What prepare did for this plan: the same settings, found again by the same names.
    prepared[g].time_slice_applied = group.plan.kind == SharingKind::kTimeSlicing && !group.gpu_uuids.empty();
    if (group.plan.kind == SharingKind::kMps) prepared[g].mps_daemon_id = mps_daemon_id(claim.uid, group.uuids);
    for (std::size_t k = 0; k < group.devices.size(); ++k) {
      const auto* d = group.devices[k];
      const auto& r = allocation->results[group.results[k]];
      PreparedEntry entry{d->type, d->uuid, d->parent_uuid, d->parent_minor, d->gi_id, d->ci_id, {r.request},
                          options_.node_name, d->name,
                          {cdi::qualified_device_id(cdi::kGpuVendor, cdi::kClaimClass,
                                                    cdi::claim_device_name(claim.uid, d->name))}};
      if (d->dynamic) {  // its ids are the MIG device's that carries the name now
        auto existing = co_await dynamic_mig_->list(d->parent_uuid);
        if (!existing) co_return existing.error();
        bool found = false;
        for (const auto& m : *existing)
          if (m.canonical_name() == d->name)
            entry.uuid = m.uuid, entry.gi_id = m.gi_id, entry.ci_id = m.ci_id, found = true;
        if (!found)
          co_return fail(ErrorCode::kNotFound, "its MIG device " + d->name + " no longer exists: not rebuilt");
      }
      prepared[g].devices.push_back(std::move(entry));
    }
  }
  CheckpointedClaim entry{ClaimState::kPrepareCompleted, encode_claim_status(*allocation),
                          encode_prepared_groups(prepared), claim.name, claim.namespace_name, {}};
  if (auto st = co_await committer_.commit({ClaimUpdate{claim.uid, entry}}); !st) {
    Error e = st.error();
    e.claim = claim.describe();
    co_return e;
  }
  co_return Status{};
}

}  // namespace nvdra::claims
