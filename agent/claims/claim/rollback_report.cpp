#include "agent/claims/claim/rollback_report.hpp"

#include "agent/base/log.hpp"

namespace nvdra::claims {

void report_failed_rollback(std::string_view driver, const kubelet::ClaimRef& claim, const Error& undo,
                            const RollbackFailed& told) {
  // The entry stays PrepareStarted, so the rollback is tried again; the operator learns now.
  const std::string left = "rolling back the failed prepare of claim " + claim.describe() +
                           " left something behind: " + undo.describe() +
                           "; its checkpoint entry stays PrepareStarted and the rollback is tried again at the "
                           "claim's next prepare or unprepare and at the agent's next start";
  nvdra::logger(std::string(driver))->warn("{}", left);
  if (told) told(claim, left);
}

}  // namespace nvdra::claims
