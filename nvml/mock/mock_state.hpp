#pragma once
// The mutable half of a mock machine — MIG mode, GPU/compute instances, injected events, lost
// GPUs — kept in a state file outside the loaded image, as a real GPU keeps it in the kernel
// driver: it survives dlclose, is shared by every process that loads the mock with the same
// profile, and an agent killed mid-change finds the GPU as it left it. flock(2) on "<file>.lock"
// orders processes; a mutex orders threads.
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nvml/mock/machine_profile.hpp"
#include "nvml/mock/mig_layout.hpp"

namespace nvdra::nvml::mock {

struct GpuState {
  unsigned mig_current = 0;
  unsigned mig_pending = 0;
  bool persistence = false;
  bool lost = false;
  unsigned recovery_action = 0;    // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION's value
  bool events_supported = true;    // false: nvmlDeviceRegisterEvents answers NOT_SUPPORTED
  int fabric_state = -1;           // nvmlGpuFabricState_t a test set (nvdraMockSetFabricState); -1: the profile's
  long long fabric_clique = -1;    // clique id a test set (nvdraMockSetFabricClique); -1: the profile's
  std::vector<GiRecord> gis;
  std::vector<CiRecord> cis;
};

struct EventRecord {
  uint64_t seq = 0;
  unsigned gpu = 0;
  unsigned long long type = 0;
  unsigned long long data = 0;
  unsigned gi = 0xFFFFFFFF;
  unsigned ci = 0xFFFFFFFF;
};

// A failure a test queued (test_hooks.h nvdraMockFailNext): the next `remaining` calls of
// `function` on any device return `rc` and change nothing.
struct InjectedFailure {
  std::string function;
  int rc = 0;
  unsigned remaining = 0;
};

struct MachineState {
  std::string fingerprint;  // of the profile the state belongs to
  std::vector<GpuState> gpus;
  std::vector<InjectedFailure> failures;
  std::vector<EventRecord> events;  // the most recent kMaxEvents
  uint64_t next_seq = 1;
  static constexpr size_t kMaxEvents = 256;
};

// The state a freshly booted machine has: the profile's MIG mode and pre-created layout.
MachineState initial_state(const MachineProfile& profile);
std::string serialize_state(const MachineState& state);
std::optional<MachineState> parse_state(const std::string& text);

class StateFile {
 public:
  enum class Access { kRead, kWrite };
  StateFile(std::string path, const MachineProfile& profile);
  ~StateFile();
  StateFile(const StateFile&) = delete;
  StateFile& operator=(const StateFile&) = delete;

  // Runs fn on the current state under the lock. With kWrite, a SUCCESS result is written back
  // before the lock is released. A missing, corrupt or foreign (other profile) file reads as the
  // initial state.
  int with(Access access, const std::function<int(MachineState&)>& fn);
  const std::string& path() const { return path_; }

 private:
  MachineState load_locked();
  uint64_t* generation();
  std::string path_;
  const MachineProfile& profile_;
  std::mutex mu_;
  std::string cached_text_;
  std::optional<MachineState> cached_;
  // "<file>.gen": a counter every writer bumps after replacing the file, mapped shared by every
  // process that loads the mock. A read whose counter has not moved since the last one reuses the
  // parsed state without a system call (an agent's start makes ~150 NVML calls into the mock;
  // each opened and read the file). nullptr: not mapped (yet, or it could not be), read the file.
  uint64_t* generation_ = nullptr;
  bool generation_tried_ = false;
  uint64_t cached_generation_ = 0;
};

}  // namespace nvdra::nvml::mock
