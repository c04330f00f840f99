#include "imex/unit_policy.hpp"

namespace nvdra::imex {

const char* to_string(CheckPolicy policy) {
  switch (policy) {
    case CheckPolicy::kWarn: return "warn";
    case CheckPolicy::kEnforce: return "enforce";
    case CheckPolicy::kOff: return "off";
  }
  return "unknown";
}

bool is_active(const UnitState& s) { return s.active_state == "active" || s.active_state == "reloading"; }

std::string describe(const UnitState& s) {
  return "load=" + s.load_state + " active=" + s.active_state + " sub=" + s.sub_state;
}

std::string describe(const UnitView& v) {
  switch (v.reach) {
    case Reach::kKnown: return describe(v.state);
    case Reach::kNoSystemd: return "unknown: " + v.problem;
    case Reach::kUnknown: break;
  }
  return v.problem.empty() ? std::string("unknown: not read yet") : "unknown: " + v.problem;
}

Status prepare_allowed(CheckPolicy policy, const UnitView& view) {
  if (policy != CheckPolicy::kEnforce) return {};
  if (view.reach == Reach::kKnown && is_active(view.state)) return {};
  std::string why = view.reach == Reach::kKnown ? "it is not active (" + describe(view.state) + ")"
                                                 : "its state cannot be confirmed (" + describe(view) + ")";
  return make_error(ErrorCode::kUnavailable,
                    "the host's IMEX unit " + view.unit + " must be active for new channel claims under "
                    "--imex-check=enforce, but " + why + "; the agent never starts it: start it on the host "
                    "(systemctl start " + view.unit + ") and kubelet's next retry will prepare the claim");
}

}  // namespace nvdra::imex
