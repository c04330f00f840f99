// GpuClaimHandler::repair_spec / ensure_spec — a prepared claim's CDI spec damaged on disk after its
// prepare (deleted, truncated, overwritten) is written again from the checkpoint entry, at the
// claim's next prepare and at start-up, so that its next container starts. Nothing here touches
// the GPUs: the edits are those prepare computed, from the same inventory, MIG ids and MPS daemon.
#include <simdjson.h>

#include <optional>

#include "agent/base/log.hpp"
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::claims {

namespace {

// "" when `content` is a JSON object (what a spec at least is), else what is wrong with it.
std::string spec_problem(const std::string& content) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(content).get(doc)) return "not valid JSON";
  if (!doc.is_object()) return "not a JSON object";
  return {};
}

}  // namespace

Status GpuClaimHandler::repair_spec(const kubelet::ClaimRef& claim, const std::vector<PreparedGroup>& groups,
                                    std::string& note) {
  const std::string base = cdi::transient_spec_name(cdi::kGpuVendor, cdi::kClaimClass, claim.uid);
  std::string problem = "missing";
  for (std::string_view ext : {cdi::kSpecExtension, cdi::kLegacySpecExtension}) {
    auto content = specs_.read(base + std::string(ext));
    if (!content) {
      if (content.error().code != ErrorCode::kNotFound) return content.error();
      continue;
    }
    problem = spec_problem(*content);
    if (problem.empty()) return {};  // intact (the legacy .json of an older nvdra counts)
  }

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
      const auto daemon = services_->mps_daemon(group.mps_daemon_id, {}, {});
      mps = cdi::mps_edits(cdi::MpsSettings{daemon.pipe_dir(), daemon.shm_dir(), {}});
    }
    for (const auto& entry : group.devices) {
      cdi::ContainerEdits e;
      if (entry.type == DeviceType::kVfio) return fail("device " + entry.device + " is a VFIO device");
      if (entry.type == DeviceType::kMig) {
        auto mig = cdi::read_mig_edits(cdi::MigDevice{entry.parent_minor, entry.gi_id, entry.ci_id}, options_.host);
        if (!mig) return fail(mig.error().describe());
        e = std::move(*mig);
      } else {
        const auto* d = inventory_.find(entry.device);
        if (!d) return fail("device " + entry.device + " is no longer on this node");
        e = cdi::gpu_edits(cdi::GpuDevice{d->minor, d->pci_bus_id}, options_.host);
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
  auto spec = cdi::build_claim_spec(cdi::kGpuVendor, claim.uid, std::move(edits), options_.common_edits);
  if (!spec) return fail(spec.error().describe());
  // The ids kubelet was given must stay valid: the rebuilt spec has to name exactly those.
  if (spec->device_ids != ids) return fail("the rebuilt spec's device ids differ from the checkpoint's");
  const cdi::SpecChange changes[] = {cdi::SpecChange::write(*spec),  // and no damaged legacy .json beside it
                                     cdi::SpecChange::remove(base + std::string(cdi::kLegacySpecExtension))};
  if (auto st = specs_.apply(changes); !st) return st;
  note = "CDI spec " + spec->file_name + " of prepared claim " + claim.describe() + " was " + problem +
         ": rewritten from the checkpoint";
  return {};
}

boost::asio::awaitable<Result<bool>> GpuClaimHandler::ensure_spec(const kubelet::ClaimRef& claim,
                                                                  const CheckpointedClaim& entry) {
  auto groups = decode_prepared_groups(entry.prepared_devices, claim.describe());
  if (!groups) co_return groups.error();
  std::string note;
  Status st = co_await pool_.run([&] { return repair_spec(claim, *groups, note); });
  if (!st) co_return st.error();
  if (note.empty()) co_return false;
  nvdra::logger("claims")->warn("{}", note);
  if (options_.on_spec_rewritten) options_.on_spec_rewritten(claim, note);
  co_return true;
}

}  // namespace nvdra::claims
