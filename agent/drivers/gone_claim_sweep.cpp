#include "agent/drivers/gone_claim_sweep.hpp"

namespace nvdra::drivers {

std::vector<kubelet::ClaimRef> gone_claim_candidates(const claims::Checkpoint& checkpoint) {
  std::vector<kubelet::ClaimRef> out;
  for (const auto& [uid, entry] : checkpoint.claims)
    if (entry.state == claims::ClaimState::kPrepareCompleted && !entry.name.empty())
      out.push_back({entry.ns, entry.name, uid});
  return out;
}

boost::asio::awaitable<GoneClaimReport> sweep_gone_claims(std::vector<kubelet::ClaimRef> candidates,
                                                          const GoneClaimSweep& with) {
  GoneClaimReport report;
  for (auto& claim : candidates) {
    if (!with.still_prepared(claim)) continue;
    auto exists = co_await with.exists(claim);
    ++report.asked;
    if (!exists) {
      report.errors.push_back("claim " + claim.describe() + ": cannot tell whether the API still has it (" +
                              exists.error().describe() + "): kept prepared");
      continue;
    }
    // Asked again after the read: kubelet may have unprepared it meanwhile.
    if (*exists || !with.still_prepared(claim)) continue;
    if (auto error = co_await with.unprepare(claim); !error.empty())
      report.errors.push_back("claim " + claim.describe() + " is gone from the API, but unpreparing it failed: " + error);
    else
      report.unprepared.push_back(claim.uid);
  }
  co_return report;
}

}  // namespace nvdra::drivers
