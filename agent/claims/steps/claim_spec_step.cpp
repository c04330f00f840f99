// Claim CDI spec step: the claim's spec (one claim-scoped device per allocated device, as upstream)
// is written last, and the PrepareCompleted entry's groups are built from it; unprepare and rollback
// remove it. Owns <area>.prepare.after-cdi-write and <area>.unprepare.after-cdi-remove. Start-up:
// recover writes a completed claim's damaged spec again from its entry (kRepair, claim_spec_repair.cpp)
// and records a taken-over claim's devices with the ids its spec on the node names (kAdopt).
#include "agent/base/crash_point.hpp"
#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"

namespace nvdra::claims {
namespace {

// The checkpoint's groups: the devices in the order the groups listed them, with their spec ids.
void record(GpuPrepare& c, const std::vector<std::string>& ids) {
  std::size_t next = 0;
  for (std::size_t g = 0; g < c.groups->size(); ++g)
    for (std::size_t k = 0; k < (*c.groups)[g].devices.size(); ++k) {
      const auto* d = (*c.groups)[g].devices[k];
      const auto& r = c.allocation->results[(*c.groups)[g].results[k]];
      PreparedEntry entry{d->type, d->uuid, d->parent_uuid, d->parent_minor, d->gi_id,
                          d->ci_id, {r.request}, c.node.node_name, d->name, {ids[next++]},
                          r.share_id, {}};
      for (const auto* live : {&c.created, &c.shared})
        if (auto made = live->find(d->name); made != live->end())
          entry.uuid = made->second.uuid, entry.gi_id = made->second.gi_id, entry.ci_id = made->second.ci_id;
      if (d->type == DeviceType::kVfio)  // Metadata: DeviceMetadata only
        entry.pci_bus_id = d->pci_bus_id, entry.metadata = c.node.vfio->checkpoint_metadata(d->name);
      c.prepared[g].devices.push_back(std::move(entry));
    }
}

// A taken-over claim's devices as its prepare recorded them: the claim-scoped CDI ids by their names,
// a DynamicMIG device's ids those the dynamic MIG step found.
void record_adopted(GpuPrepare& c) {
  for (std::size_t g = 0; g < c.groups->size(); ++g) {
    const auto& group = (*c.groups)[g];
    for (std::size_t k = 0; k < group.devices.size(); ++k) {
      const auto* d = group.devices[k];
      const auto& r = c.allocation->results[group.results[k]];
      PreparedEntry entry{d->type, d->uuid, d->parent_uuid, d->parent_minor, d->gi_id, d->ci_id, {r.request},
                          c.node.node_name, d->name,
                          {cdi::qualified_device_id(cdi::kGpuVendor, cdi::kClaimClass,
                                                    cdi::claim_device_name(c.claim.uid, d->name))}};
      if (auto made = c.created.find(d->name); made != c.created.end())
        entry.uuid = made->second.uuid, entry.gi_id = made->second.gi_id, entry.ci_id = made->second.ci_id;
      c.prepared[g].devices.push_back(std::move(entry));
    }
  }
}

// kRepair: the entry as it is now (the dynamic MIG step may have just recorded new MIG ids).
boost::asio::awaitable<Status> repair(GpuPrepare& c) {
  if (c.recovery->intact_specs && c.recovery->intact_specs->count(c.claim.uid)) co_return Status{};
  const auto entry = c.node.committer.current().claims.at(c.claim.uid);  // a copy: commits change the map
  auto spec = co_await ensure_claim_spec(c.node, c.claim, entry);
  if (!spec) co_return spec.error();
  if (*spec) c.recovery->report->rewritten_specs.push_back(c.claim.uid);
  co_return Status{};
}

class ClaimSpecStep final : public GpuStep {
 public:
  std::string_view name() const override { return "claim-spec"; }
  Status plan(GpuPrepare&) const override { return {}; }

  // The claim's CDI spec: start-up removes a claim spec that no entry names (remove_orphan_specs).
  bool needs_record(const GpuPrepare&) const override { return false; }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    co_return co_await c.node.pool.run([&c, area = c.area]() -> Status {
      // The last reader of the edits: moved, not copied (the driver's common edits are most of them).
      auto spec = cdi::build_claim_spec(cdi::kGpuVendor, c.claim.uid, std::move(c.edits), std::move(c.claim_edits));
      if (!spec) return spec.error();
      if (auto st = c.node.specs.write(*spec); !st) return st;
      crash_point(area, "prepare.after-cdi-write");
      record(c, spec->device_ids);
      return {};
    });
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    const std::string_view area = c.area;
    Status st = co_await c.node.pool.run([&c] { return c.node.specs.remove_claim(cdi::kGpuVendor, c.claim.uid); });
    if (st) crash_point(area, "unprepare.after-cdi-remove");
    co_return st;
  }

  boost::asio::awaitable<Status> recover(GpuPrepare& c) override {
    if (c.recovery->pass == RecoveryPass::kRepair) co_return co_await repair(c);
    if (c.recovery->pass == RecoveryPass::kAdopt) record_adopted(c);
    co_return Status{};
  }
};

}  // namespace

GpuStep& claim_spec_step() {
  static ClaimSpecStep step;
  return step;
}

}  // namespace nvdra::claims
