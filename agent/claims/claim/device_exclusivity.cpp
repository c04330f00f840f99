#include "agent/claims/claim/device_exclusivity.hpp"

#include "agent/claims/claim/prepared_claim.hpp"

namespace nvdra::claims {

namespace {

// The result that holds `device` for `driver` in `results`, if any.
const ResultView* holding(const std::vector<ResultView>& results, std::string_view driver, const std::string& device) {
  for (const auto& r : results)
    if (r.driver == driver && r.device == device) return &r;
  return nullptr;
}

}  // namespace

Status check_device_exclusivity(const Checkpoint& checkpoint, const std::string& uid,
                                const std::vector<AllocationResult>& results, std::string_view driver) {
  // adminAccess results (and other drivers') hold nothing: a claim of only those needs no look.
  std::vector<const AllocationResult*> exclusive;
  for (const auto& mine : results)
    if (mine.driver == driver && !mine.admin_access) exclusive.push_back(&mine);
  if (exclusive.empty()) return Status{};
  for (const auto& [other_uid, entry] : checkpoint.claims) {
    if (other_uid == uid) continue;
    // Unreadable results read as none: the claim's own prepare/unprepare reports them.
    const auto other = result_views(entry.status);
    for (const auto* p : exclusive) {
      const auto& mine = *p;
      const auto* theirs = holding(other, driver, mine.device);
      if (!theirs || theirs->admin_access) continue;
      if (!mine.share_id.empty() && !theirs->share_id.empty()) continue;
      return make_error(ErrorCode::kFailedPrecondition,
                        "requested device " + mine.device + " is already allocated to different claim " + other_uid);
    }
  }
  return Status{};
}

}  // namespace nvdra::claims
