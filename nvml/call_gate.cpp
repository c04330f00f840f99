#include "nvml/call_gate.hpp"

namespace nvdra::nvml {

void CallGate::give_up(bool shut) noexcept {
  std::lock_guard lock(mu_);
  if (shut) {
    if (--shut_ == 0) why_.clear();
  } else if (--inside_ == 0) {
    left_.notify_all();
  }
}

Result<CallGate::Pass> CallGate::enter(const std::string& subject) {
  std::lock_guard lock(mu_);
  if (shut_ > 0)
    return make_error(ErrorCode::kUnavailable, "NVML is not asked about " + subject + " now: " + why_ +
                                                   " (a lookup would open the GPU again and hold up the unbind)");
  ++inside_;
  return Pass(this);
}

CallGate::Shut CallGate::shut(const std::string& why) {
  std::unique_lock lock(mu_);
  if (shut_++ == 0) why_ = why;
  left_.wait(lock, [&] { return inside_ == 0; });
  return Shut(this);
}

}  // namespace nvdra::nvml
