// GpuClaimHandler::recover — start-up reconciliation of the checkpoint, the API and the CDI
// directory (issue "GPU claims" §3; reference §6.3–6.4); each claim's own start-up work is its steps'
// recover (steps/gpu_recovery.hpp).
#include <optional>
#include <string_view>

#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"

namespace nvdra::claims {

namespace {

// The claim UID of "<vendor>-claim_<uid>.json|.yaml", or "" for other files.
std::string claim_uid_of(std::string_view file) {
  const std::string prefix = cdi::transient_spec_name(cdi::kGpuVendor, cdi::kClaimClass, "");
  if (file.substr(0, prefix.size()) != prefix) return {};
  for (std::string_view ext : {cdi::kSpecExtension, cdi::kLegacySpecExtension})
    if (file.size() > prefix.size() + ext.size() && file.substr(file.size() - ext.size()) == ext)
      return std::string(file.substr(prefix.size(), file.size() - prefix.size() - ext.size()));
  return {};
}

// Claim spec files of this vendor that no checkpoint entry owns go (an unreadable entry owns its own).
boost::asio::awaitable<void> remove_orphan_specs(runtime::WorkerPool& pool, cdi::SpecStore& specs,
                                                 const CheckpointCommitter& committer, RecoveryReport& report) {
  // optional: co_spawn needs a default-constructible result type.
  auto listed = co_await pool.run([&specs] { return std::optional(specs.list()); });
  auto& files = *listed;
  if (!files) {
    report.errors.push_back(files.error());
    co_return;
  }
  for (const auto& file : *files) {
    std::string uid = claim_uid_of(file);
    if (uid.empty() || committer.current().claims.count(uid)) continue;
    Status st = co_await pool.run([&specs, &uid] { return specs.remove_claim(cdi::kGpuVendor, uid); });
    if (st) report.orphan_specs.push_back(file);
    else report.errors.push_back(st.error());
  }
}

}  // namespace

// Start-up as phases: what the claims hold (kHold walk), what stopped half-way undone,
// the node-wide DynamicMIG and FM reconciles around the kRepair walk, orphan specs last.
boost::asio::awaitable<RecoveryReport> GpuClaimHandler::recover() {
  RecoveryReport report;
  co_await adopt_fabric(report);  // which claims hold which FM partitions, before any is undone
  co_await undo_unfinished(report);
  // MIG devices no claim owns go before the walk recreates the claims' missing ones in their place.
  const bool mig = dynamic_mig_ && !inventory_.dynamic_gpus().empty();
  std::optional<MissingMigs> missing;
  if (mig) missing = co_await destroy_orphan_migs(*services_, report);
  // The claims that stay prepared get their MIG devices back, then their CDI spec if it was damaged.
  co_await repair_completed(missing ? &*missing : nullptr, report);
  if (mig) co_await disable_unused_migs(*services_, report);
  if (options_.fabric)
    if (auto st = co_await options_.fabric->reconcile(); !st) report.errors.push_back(st.error());
  co_await remove_orphan_specs(pool_, specs_, committer_, report);
  co_return report;
}

boost::asio::awaitable<void> GpuClaimHandler::undo_unfinished(RecoveryReport& report) {
  // The unfinished ones first (a copy of their entries: the loop commits, erasing them, as it walks).
  std::vector<std::pair<std::string, CheckpointedClaim>> unfinished;
  for (const auto& [uid, entry] : committer_.current().claims) {
    if (entry.state == ClaimState::kPrepareStarted) {
      unfinished.emplace_back(uid, entry);
    } else if (entry.state == ClaimState::kPrepareCompleted) {
      // Neither unprepared nor rolled back: nothing says what it holds, so it is kept as it is.
      if (auto readable = entry_readable(uid, entry); !readable)
        report.unreadable.push_back({{entry.ns, entry.name, uid}, readable.error().describe()});
    }
  }
  for (const auto& [uid, entry] : unfinished) {
    auto undo = undo_groups(uid, entry);
    Status st = undo ? co_await undo_claim({entry.ns, entry.name, uid}, std::move(*undo)) : Status(undo.error());
    if (st) report.rolled_back.push_back(uid);
    else report.errors.push_back(st.error());
  }
}

// Every completed claim (unreadable ones too: their errors are reported) through every step's
// recover, in apply order; each step's error is reported and the next step still runs.
boost::asio::awaitable<void> GpuClaimHandler::repair_completed(const MissingMigs* missing_migs,
                                                               RecoveryReport& report) {
  std::vector<kubelet::ClaimRef> completed;
  for (const auto& [uid, entry] : committer_.current().claims)
    if (entry.state == ClaimState::kPrepareCompleted) completed.push_back({entry.ns, entry.name, uid});
  // Every claim's spec read in one pool job; the walk's claim spec step looks again only at the others.
  const auto intact = co_await pool_.run([this, &completed] { return intact_claim_specs(*services_, completed); });
  GpuRecovery recovery{RecoveryPass::kRepair, &report, missing_migs};
  recovery.intact_specs = &intact;
  for (const auto& claim : completed) {
    GpuPrepare kept{*services_, claim, {}};
    kept.recovery = &recovery;
    for (auto* step : gpu_prepare_steps())
      if (auto st = co_await step->recover(kept); !st) report.errors.push_back(st.error());
  }
}

}  // namespace nvdra::claims
