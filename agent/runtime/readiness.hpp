#pragma once
// Readiness — the agent is ready (sd_notify READY=1, health SERVING) once every condition that a
// component declared has been satisfied: for each enabled driver, "registered with kubelet" and
// "devices published". Conditions are declared before seal(); seal() marks the end of start-up
// wiring, so an agent with no conditions is ready at once. io_context thread only.
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace nvdra::runtime {

class Readiness {
 public:
  void expect(const std::string& condition) { pending_.insert(condition); }
  void satisfy(const std::string& condition) {
    pending_.erase(condition);
    maybe_fire();
  }
  void seal() {
    sealed_ = true;
    maybe_fire();
  }
  void on_ready(std::function<void()> fn) { callbacks_.push_back(std::move(fn)); }

  bool ready() const { return fired_; }
  const std::set<std::string>& pending() const { return pending_; }

 private:
  void maybe_fire() {
    if (fired_ || !sealed_ || !pending_.empty()) return;
    fired_ = true;
    for (auto& fn : callbacks_) fn();
    callbacks_.clear();
  }
  std::set<std::string> pending_;
  std::vector<std::function<void()>> callbacks_;
  bool sealed_ = false;
  bool fired_ = false;
};

}  // namespace nvdra::runtime
