// GpuClaimHandler's DynamicMIG start-up (creating and destroying a claim's MIG devices is the
// step's: steps/dynamic_mig_step.cpp): the reconciliation of the GPUs' MIG devices with the
// checkpoint (upstream-driver.md §6.4: MIG devices no prepared claim owns are destroyed, MIG mode goes off on Hopper+ GPUs left
// without any; here also: a prepared claim whose MIG device is gone gets it recreated).
#include <set>

#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::claims {

namespace {

Error with_context(Error e, const std::string& context) {
  e.message = context + ": " + e.message;
  return e;
}

}  // namespace

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

boost::asio::awaitable<void> GpuClaimHandler::reconcile_dynamic_mig(RecoveryReport& report) {
  // MIG devices of completed claims, by device name, with the ids the checkpoint recorded.
  struct Owned {
    std::string uid;
    unsigned gi = 0, ci = 0;
  };
  std::map<std::string, Owned> owned;
  for (const auto& [uid, entry] : committer_.current().claims) {
    if (entry.state != ClaimState::kPrepareCompleted) continue;
    auto groups = decode_prepared_groups(entry.prepared_devices, uid);
    if (!groups) continue;
    for (const auto& g : *groups)
      for (const auto& d : g.devices)
        if (const auto* inv = inventory_.find(d.device); d.type == DeviceType::kMig && inv && inv->dynamic)
          owned[d.device] = Owned{uid, d.gi_id, d.ci_id};
  }
  // An entry whose devices cannot be read may own any MIG device here: then none is destroyed and
  // MIG mode stays as it is; the claims that can be read still get theirs recreated.
  const bool proven = report.unreadable.empty();
  std::set<std::string> present;
  for (const auto& gpu : inventory_.dynamic_gpus()) {
    // A GPU instance without compute instance is a create cut off half-way (SIGKILL between the
    // GI and CI calls): never a completed claim's, invisible as a MIG device, yet it holds its
    // placement. Gone first, so recreating a claim's device below can take that placement.
    if (proven)
      for (auto& name : co_await dynamic_mig_->destroy_bare_instances(gpu, report.errors))
        report.orphan_migs.push_back(std::move(name));
    auto migs = co_await dynamic_mig_->list(gpu.uuid);
    if (!migs) {
      report.errors.push_back(migs.error());
      continue;
    }
    for (const auto& m : *migs) {
      const std::string name = m.canonical_name();
      auto it = owned.find(name);
      if (it != owned.end() && it->second.gi == m.gi_id && it->second.ci == m.ci_id) {
        present.insert(name);
        continue;
      }
      // No claim owns it (or not this instance of the placement: recreated below with its caps).
      if (!proven) {
        report.kept_migs.push_back(name);
        continue;
      }
      if (auto st = co_await dynamic_mig_->destroy_instance(gpu, m); st) report.orphan_migs.push_back(name);
      else report.errors.push_back(with_context(st.error(), "destroying orphan MIG device " + name));
    }
  }
  std::map<std::string, std::vector<std::string>> missing;  // claim uid -> device names
  for (const auto& [name, o] : owned)
    if (!present.count(name)) missing[o.uid].push_back(name);
  for (const auto& [uid, names] : missing) {
    const auto entry = committer_.current().claims.at(uid);  // a copy: recreate_missing commits
    if (auto st = co_await recreate_missing(uid, entry, names, report); !st) report.errors.push_back(st.error());
  }
  if (proven)
    for (const auto& gpu : inventory_.dynamic_gpus()) (void)co_await dynamic_mig_->disable_if_unused(gpu);
}

boost::asio::awaitable<Status> GpuClaimHandler::recreate_missing(const std::string& uid, const CheckpointedClaim& entry,
                                                                 const std::vector<std::string>& missing,
                                                                 RecoveryReport& report) {
  const kubelet::ClaimRef claim{entry.ns, entry.name, uid};
  auto groups = decode_prepared_groups(entry.prepared_devices, claim.describe());
  if (!groups) co_return groups.error();
  for (auto& g : *groups)
    for (auto& d : g.devices) {
      if (std::find(missing.begin(), missing.end(), d.device) == missing.end()) continue;
      auto made = co_await dynamic_mig_->create(*inventory_.find(d.device));
      if (!made) {
        Error e = with_context(made.error(), "claim " + claim.describe() + ": its MIG device " + d.device +
                                                 " is gone and could not be recreated");
        e.claim = claim.describe();
        co_return e;
      }
      d.uuid = made->uuid, d.gi_id = made->gi_id, d.ci_id = made->ci_id;
      report.recreated_migs.push_back(uid + "/" + d.device);
    }
  // The claim's CDI spec names the caps of the new instances (DynamicMIG excludes MPS: no MPS edits).
  Status st = co_await pool_.run([&]() -> Status {
    std::vector<cdi::NamedEdits> edits;
    for (const auto& g : *groups)
      for (const auto& d : g.devices) {
        const auto* inv = inventory_.find(d.device);
        if (!inv) return make_error(ErrorCode::kFailedPrecondition, "device " + d.device + " is no longer on this node");
        if (d.type == DeviceType::kMig) {
          auto mig = cdi::read_mig_edits(cdi::MigDevice{inv->parent_minor, d.gi_id, d.ci_id}, options_.host);
          if (!mig) return mig.error();
          edits.push_back(cdi::NamedEdits{d.device, std::move(*mig)});
        } else {
          edits.push_back(cdi::NamedEdits{d.device, cdi::gpu_edits(cdi::GpuDevice{inv->minor, inv->pci_bus_id}, options_.host)});
        }
      }
    auto spec = cdi::build_claim_spec(cdi::kGpuVendor, uid, std::move(edits));
    if (!spec) return spec.error();
    return specs_.write(*spec);
  });
  if (!st) co_return with_context(st.error(), "claim " + claim.describe() + ": rewriting its CDI spec");
  CheckpointedClaim updated = entry;
  updated.prepared_devices = encode_prepared_groups(*groups);
  co_return co_await committer_.commit({ClaimUpdate{uid, updated}});
}

}  // namespace nvdra::claims
