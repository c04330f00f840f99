// ensure_claim_spec — a prepared claim's CDI spec damaged on disk after its prepare (deleted,
// truncated, overwritten) is written again from the checkpoint entry, at the claim's next prepare and
// at start-up (the claim spec step's recover), so that its next container starts. Nothing here touches
// the GPUs: the edits are those prepare computed, from the same inventory, MIG ids and MPS daemon.
#include <simdjson.h>

#include <optional>

#include "agent/base/log.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::claims {

namespace {

// "" when `content` is a JSON object (what a spec at least is), else what is wrong with it.
std::string spec_problem(const std::string& content) {
  // One per pool thread, kept: a parser of its own for each of a start's claims allocated its buffers anew.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(content).get(doc)) return "not valid JSON";
  if (!doc.is_object()) return "not a JSON object";
  return {};
}

// Reads the spec; only when damaged writes it again from `groups` and sets `note` to what was wrong.
// Blocking (file I/O): on the worker pool.
// What is wrong with the claim's spec on disk: "" when intact (the legacy .json of an older nvdra counts).
Result<std::string> damage_of(const GpuServices& node, const std::string& base) {
  std::string problem = "missing";
  for (std::string_view ext : {cdi::kSpecExtension, cdi::kLegacySpecExtension}) {
    auto content = node.specs.read(base + std::string(ext));
    if (!content) {
      if (content.error().code != ErrorCode::kNotFound) return content.error();
      continue;
    }
    problem = spec_problem(*content);
    if (problem.empty()) return problem;
  }
  return problem;
}

Status repair_spec(const GpuServices& node, const kubelet::ClaimRef& claim, const std::vector<PreparedGroup>& groups,
                   std::string& note) {
  const std::string base = cdi::transient_spec_name(cdi::kGpuVendor, cdi::kClaimClass, claim.uid);
  auto damage = damage_of(node, base);
  if (!damage) return damage.error();
  if (damage->empty()) return {};
  const std::string& problem = *damage;
  auto fail = [&](std::string why) {
    Error e = make_error(ErrorCode::kFailedPrecondition,
                         "its CDI spec " + base + std::string(cdi::kSpecExtension) + " is " + problem +
                             " and cannot be rewritten: " + std::move(why));
    e.claim = claim.describe();
    return e;
  };
  std::vector<cdi::NamedEdits> edits;
  std::vector<std::string> ids;
  for (const auto& group : groups) {
    std::optional<cdi::ContainerEdits> mps;
    if (!group.mps_daemon_id.empty()) {
      const auto daemon = node.mps_daemon(group.mps_daemon_id, {}, {});
      mps = cdi::mps_edits(cdi::MpsSettings{daemon.pipe_dir(), daemon.shm_dir(), {}});
    }
    for (const auto& entry : group.devices) {
      cdi::ContainerEdits e;
      if (entry.type == DeviceType::kVfio) return fail("device " + entry.device + " is a VFIO device");
      if (entry.type == DeviceType::kMig) {
        auto mig = cdi::read_mig_edits(cdi::MigDevice{entry.parent_minor, entry.gi_id, entry.ci_id}, node.host);
        if (!mig) return fail(mig.error().describe());
        e = std::move(*mig);
      } else {
        const auto* d = node.inventory.find(entry.device);
        if (!d) return fail("device " + entry.device + " is no longer on this node");
        e = cdi::gpu_edits(cdi::GpuDevice{d->minor, d->pci_bus_id}, node.host);
      }
      if (mps) {
        e.env.insert(e.env.end(), mps->env.begin(), mps->env.end());
        e.mounts.insert(e.mounts.end(), mps->mounts.begin(), mps->mounts.end());
        e.device_nodes.insert(e.device_nodes.end(), mps->device_nodes.begin(), mps->device_nodes.end());
      }
      edits.push_back(cdi::NamedEdits{entry.device, std::move(e)});
      ids.insert(ids.end(), entry.cdi_device_ids.begin(), entry.cdi_device_ids.end());
    }
  }
  auto spec = cdi::build_claim_spec(cdi::kGpuVendor, claim.uid, std::move(edits), node.common_edits);
  if (!spec) return fail(spec.error().describe());
  // The ids kubelet was given must stay valid: the rebuilt spec has to name exactly those.
  if (spec->device_ids != ids) return fail("the rebuilt spec's device ids differ from the checkpoint's");
  const cdi::SpecChange changes[] = {cdi::SpecChange::write(*spec),  // and no damaged legacy .json beside it
                                     cdi::SpecChange::remove(base + std::string(cdi::kLegacySpecExtension))};
  if (auto st = node.specs.apply(changes); !st) return st;
  note = "CDI spec " + spec->file_name + " of prepared claim " + claim.describe() + " was " + problem +
         ": rewritten from the checkpoint";
  return {};
}

}  // namespace

std::set<std::string> intact_claim_specs(const GpuServices& node, const std::vector<kubelet::ClaimRef>& claims) {
  std::set<std::string> out;
  for (const auto& claim : claims)
    if (auto damage = damage_of(node, cdi::transient_spec_name(cdi::kGpuVendor, cdi::kClaimClass, claim.uid));
        damage && damage->empty())
      out.insert(claim.uid);
  return out;
}

boost::asio::awaitable<Result<bool>> ensure_claim_spec(const GpuServices& node, const kubelet::ClaimRef& claim,
                                                       const CheckpointedClaim& entry) {
  auto groups = decode_prepared_groups(entry.prepared_devices, claim.describe());
  if (!groups) co_return groups.error();
  std::string note;
  Status st = co_await node.pool.run([&] { return repair_spec(node, claim, *groups, note); });
  if (!st) co_return st.error();
  if (note.empty()) co_return false;
  nvdra::logger("claims")->warn("{}", note);
  if (node.on_spec_rewritten) node.on_spec_rewritten(claim, note);
  co_return true;
}

}  // namespace nvdra::claims
