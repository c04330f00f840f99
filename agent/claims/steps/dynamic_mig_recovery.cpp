// DynamicMIG at start-up (creating and destroying a claim's MIG devices is the step's:
// dynamic_mig_step.cpp): the GPUs' MIG devices reconciled with the checkpoint (upstream-driver.md
// §6.4: MIG devices no prepared claim owns are destroyed, MIG mode goes off on Hopper+ GPUs left
// without any; here also: a prepared claim whose MIG device is gone gets it recreated), and a taken-over
// claim's MIG ids read from the GPUs.
#include <algorithm>
#include <set>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::claims {

namespace {

Error with_context(Error e, const std::string& context) {
  e.message = context + ": " + e.message;
  return e;
}

// MIG devices of completed claims, by device name, with the ids the checkpoint recorded.
struct Owned {
  std::string uid;
  unsigned gi = 0, ci = 0;
};

std::map<std::string, Owned> owned_migs(const GpuServices& node) {
  std::map<std::string, Owned> owned;
  for (const auto& [uid, entry] : node.committer.current().claims) {
    if (entry.state != ClaimState::kPrepareCompleted) continue;
    auto groups = decode_prepared_groups(entry.prepared_devices, uid);
    if (!groups) continue;
    for (const auto& g : *groups)
      for (const auto& d : g.devices)
        if (const auto* inv = node.inventory.find(d.device); d.type == DeviceType::kMig && inv && inv->dynamic)
          owned[d.device] = Owned{uid, d.gi_id, d.ci_id};
  }
  return owned;
}

// One GPU's MIG devices: the owned ones found go to `present`, the others are destroyed (kept while
// an unreadable entry may own them).
boost::asio::awaitable<void> destroy_orphans_on(const GpuServices& node, const DynamicGpu& gpu,
                                                const std::map<std::string, Owned>& owned, bool proven,
                                                std::set<std::string>& present, RecoveryReport& report) {
  // A GPU instance without compute instance is a create cut off half-way (SIGKILL between the
  // GI and CI calls): never a completed claim's, invisible as a MIG device, yet it holds its
  // placement. Gone first, so recreating a claim's device later can take that placement.
  if (proven)
    for (auto& name : co_await node.dynamic_mig->destroy_bare_instances(gpu, report.errors))
      report.orphan_migs.push_back(std::move(name));
  auto migs = co_await node.dynamic_mig->list(gpu.uuid);
  if (!migs) {
    report.errors.push_back(migs.error());
    co_return;
  }
  for (const auto& m : *migs) {
    const std::string name = m.canonical_name();
    auto it = owned.find(name);
    if (it != owned.end() && it->second.gi == m.gi_id && it->second.ci == m.ci_id) {
      present.insert(name);
      continue;
    }
    // No claim owns it (or not this instance of the placement: recreated later with its caps).
    if (!proven) {
      report.kept_migs.push_back(name);
      continue;
    }
    if (auto st = co_await node.dynamic_mig->destroy_instance(gpu, m); st) report.orphan_migs.push_back(name);
    else report.errors.push_back(with_context(st.error(), "destroying orphan MIG device " + name));
  }
}

// The claim's CDI spec names the caps of the new instances (DynamicMIG excludes MPS: no MPS edits).
Status write_spec(const GpuServices& node, const std::string& uid, const std::vector<PreparedGroup>& groups) {
  std::vector<cdi::NamedEdits> edits;
  for (const auto& g : groups)
    for (const auto& d : g.devices) {
      const auto* inv = node.inventory.find(d.device);
      if (!inv) return make_error(ErrorCode::kFailedPrecondition, "device " + d.device + " is no longer on this node");
      if (d.type == DeviceType::kMig) {
        auto mig = cdi::read_mig_edits(cdi::MigDevice{inv->parent_minor, d.gi_id, d.ci_id}, node.host);
        if (!mig) return mig.error();
        edits.push_back(cdi::NamedEdits{d.device, std::move(*mig)});
      } else {
        edits.push_back(cdi::NamedEdits{d.device, cdi::gpu_edits(cdi::GpuDevice{inv->minor, inv->pci_bus_id}, node.host)});
      }
    }
  auto spec = cdi::build_claim_spec(cdi::kGpuVendor, uid, std::move(edits));
  if (!spec) return spec.error();
  return node.specs.write(*spec);
}

}  // namespace

boost::asio::awaitable<MissingMigs> destroy_orphan_migs(const GpuServices& node, RecoveryReport& report) {
  const auto owned = owned_migs(node);
  // An entry whose devices cannot be read may own any MIG device here: then none is destroyed and
  // MIG mode stays as it is; the claims that can be read still get theirs recreated.
  const bool proven = report.unreadable.empty();
  std::set<std::string> present;
  for (const auto& gpu : node.inventory.dynamic_gpus())
    co_await destroy_orphans_on(node, gpu, owned, proven, present, report);
  MissingMigs missing;
  for (const auto& [name, o] : owned)
    if (!present.count(name)) missing[o.uid].push_back(name);
  co_return missing;
}

boost::asio::awaitable<void> disable_unused_migs(const GpuServices& node, const RecoveryReport& report) {
  if (!report.unreadable.empty()) co_return;
  for (const auto& gpu : node.inventory.dynamic_gpus()) (void)co_await node.dynamic_mig->disable_if_unused(gpu);
}

boost::asio::awaitable<Status> recreate_missing_migs(GpuPrepare& c) {
  const auto* all = c.recovery->missing_migs;
  auto mine = all ? all->find(c.claim.uid) : MissingMigs::const_iterator{};
  if (!all || mine == all->end()) co_return Status{};
  const auto& missing = mine->second;
  const std::string& uid = c.claim.uid;
  const auto entry = c.node.committer.current().claims.at(uid);  // a copy: the commit below changes it
  auto groups = decode_prepared_groups(entry.prepared_devices, c.claim.describe());
  if (!groups) co_return groups.error();
  for (auto& g : *groups)
    for (auto& d : g.devices) {
      if (std::find(missing.begin(), missing.end(), d.device) == missing.end()) continue;
      auto made = co_await c.node.dynamic_mig->create(*c.node.inventory.find(d.device));
      if (!made) {
        Error e = with_context(made.error(), "claim " + c.claim.describe() + ": its MIG device " + d.device +
                                                 " is gone and could not be recreated");
        e.claim = c.claim.describe();
        co_return e;
      }
      d.uuid = made->uuid, d.gi_id = made->gi_id, d.ci_id = made->ci_id;
      c.recovery->report->recreated_migs.push_back(uid + "/" + d.device);
    }
  Status st = co_await c.node.pool.run([&]() -> Status { return write_spec(c.node, uid, *groups); });
  if (!st) co_return with_context(st.error(), "claim " + c.claim.describe() + ": rewriting its CDI spec");
  CheckpointedClaim updated = entry;
  updated.prepared_devices = encode_prepared_groups(*groups);
  co_return co_await c.node.committer.commit_one(uid, std::move(updated));
}

boost::asio::awaitable<Status> adopted_migs(GpuPrepare& c) {
  for (const auto& group : *c.groups)
    for (const auto* d : group.devices) {
      if (!d->dynamic) continue;  // its ids are the MIG device's that carries the name now
      auto existing = co_await c.node.dynamic_mig->list(d->parent_uuid);
      if (!existing) co_return existing.error();
      bool found = false;
      for (const auto& m : *existing)
        if (m.canonical_name() == d->name) c.created[d->name] = m, found = true;
      if (!found) {
        Error e = make_error(ErrorCode::kNotFound, "its MIG device " + d->name + " no longer exists: not rebuilt");
        e.claim = c.claim.describe();
        co_return e;
      }
    }
  co_return Status{};
}

}  // namespace nvdra::claims
