#pragma once
// CallGate — lets one caller stop every other call into a library for a while, and wait for the
// calls already inside to leave. The VFIO hand-over needs it: NVML attaches a GPU (opens
// /dev/nvidia<minor>) whenever a call looks one up, and the nvidia driver's unbind of a GPU waits for
// every open file of it. So from release_gpus() until the GPU has left nvidia, no other thread of the
// agent (the clique re-read, another claim's rediscovery) may look up a GPU: such a call is refused
// at once (kUnavailable, naming why), never made to wait, because a worker waiting here could be the
// one the hand-over itself needs.
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

#include "agent/base/result.hpp"

namespace nvdra::nvml {

class CallGate {
 public:
  // What a caller holds of the gate: a call inside it (Pass) or the gate shut (Shut). Given up when
  // destroyed: the call has left, or the gate opens once every Shut is gone.
  template <bool kShut>
  class Hold {
   public:
    Hold(Hold&& o) noexcept : gate_(std::exchange(o.gate_, nullptr)) {}
    Hold& operator=(Hold&&) = delete;
    ~Hold() {
      if (gate_ != nullptr) gate_->give_up(kShut);
    }

   private:
    friend class CallGate;
    explicit Hold(CallGate* gate) : gate_(gate) {}
    CallGate* gate_;
  };
  using Pass = Hold<false>;
  using Shut = Hold<true>;

  // A pass, unless the gate is shut: then kUnavailable, naming `subject` and why the gate is shut.
  Result<Pass> enter(const std::string& subject);
  // Shuts the gate for `why` (said to every caller refused meanwhile) and returns once no call is
  // inside. Blocking: only on a worker thread.
  Shut shut(const std::string& why);

 private:
  void give_up(bool shut) noexcept;

  std::mutex mu_;
  std::condition_variable left_;
  unsigned inside_ = 0;
  unsigned shut_ = 0;
  std::string why_;
};

}  // namespace nvdra::nvml
