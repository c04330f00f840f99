#pragma once
// Helpers shared by the GPU claim handler's translation units (gpu_claim_handler.cpp: prepare,
// gpu_claim_undo.cpp: unprepare and rollback). Internal to agent/claims.
#include <string>
#include <string_view>

#include "agent/base/error.hpp"
#include "agent/claims/sharing/helper_program_mps.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::claims::handler_detail {

inline Error for_claim(Error e, const kubelet::ClaimRef& claim) {
  if (e.claim.empty()) e.claim = claim.describe();
  return e;
}

inline Error claim_error(ErrorCode code, std::string message, const kubelet::ClaimRef& claim) {
  return for_claim(make_error(code, std::move(message)), claim);
}

// The area of a claim's crash points (test/process/crash_points.txt): its kind, the most involved
// one when its groups differ. MPS claims carry their manager: its daemons survive a crash differently.
struct ClaimKind {
  bool dynamic_mig = false, mps = false, time_sliced = false, mig = false, vfio = false;
  std::string_view area(const MpsControl& mps_control) const {
    if (vfio) return "vfio";
    if (dynamic_mig) return "mig-dynamic";
    if (mps) return std::string_view(mps_control.kind()) == "systemd" ? "mps-systemd" : "mps-process";
    if (time_sliced) return "timeslice";
    return mig ? "mig-static" : "gpu";
  }
};

}  // namespace nvdra::claims::handler_detail
