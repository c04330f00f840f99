// Exported test hooks (nvml/mock/test_hooks.h).
#include <string>

#include "nvml/mock/api_support.hpp"
#include "nvml/mock/test_hooks.h"
#include "nvml/nvml_functions.hpp"

using namespace nvdra::nvml::mock;

namespace {

// Holds an NVML reference for the hook's duration, so hooks work in processes that never called
// nvmlInit themselves.
class InitScope {
 public:
  InitScope() : rc_(session_init()) {}
  ~InitScope() {
    if (rc_ == NVML_SUCCESS) session_shutdown();
  }
  nvmlReturn_t rc() const { return rc_; }

 private:
  nvmlReturn_t rc_;
};

// Finds the GPU index (and GI/CI for a MIG UUID) a UUID names.
nvmlReturn_t locate(const char* uuid, Ref* out) {
  if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlDevice_t h = nullptr;
  const nvmlReturn_t rc = nvmlDeviceGetHandleByUUID(uuid, &h);
  if (rc != NVML_SUCCESS) return rc;
  *out = *decode_handle(h);
  return NVML_SUCCESS;
}

thread_local std::string tls_text;

// Changes one GPU's state, found by UUID in the profile (a lost GPU has no handle to look up).
template <class Fn>
int with_profile_gpu(const char* uuid, Fn fn) {
  InitScope init;
  if (init.rc() != NVML_SUCCESS) return init.rc();
  auto s = current_session();
  for (unsigned i = 0; uuid != nullptr && i < s->profile.gpus.size(); ++i) {
    if (s->profile.gpus[i].uuid == uuid) {
      return s->state->with(Access::kWrite, [&](MachineState& m) {
        fn(m.gpus[i]);
        return 0;
      });
    }
  }
  return uuid == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_FOUND;
}

}  // namespace

namespace nvdra::nvml::mock {

nvmlReturn_t take_injected_failure(const char* function) {
  auto s = current_session();
  if (!s) return NVML_SUCCESS;  // the call itself reports UNINITIALIZED
  bool queued = false;
  s->state->with(Access::kRead, [&](MachineState& m) {
    for (const auto& f : m.failures) queued = queued || f.function == function;
    return 0;
  });
  if (!queued) return NVML_SUCCESS;  // the common case costs no state write
  int rc = NVML_SUCCESS;
  s->state->with(Access::kWrite, [&](MachineState& m) {
    for (auto& f : m.failures)
      if (f.function == function && f.remaining > 0) {
        rc = f.rc;
        --f.remaining;
      }
    std::erase_if(m.failures, [](const InjectedFailure& f) { return f.remaining == 0; });
    return 0;
  });
  return static_cast<nvmlReturn_t>(rc);
}

}  // namespace nvdra::nvml::mock

extern "C" {

int nvdraMockInjectEvent(const char* uuid, unsigned long long type, unsigned long long data, unsigned int gi,
                         unsigned int ci) {
  InitScope init;
  if (init.rc() != NVML_SUCCESS) return init.rc();
  Ref ref;
  // A lost GPU cannot be looked up by handle; resolve against the profile alone.
  auto s = current_session();
  bool found = false;
  for (unsigned i = 0; uuid != nullptr && i < s->profile.gpus.size(); ++i)
    if (s->profile.gpus[i].uuid == uuid) ref = Ref{Kind::kGpu, i}, found = true;
  if (!found) {
    const nvmlReturn_t rc = locate(uuid, &ref);
    if (rc != NVML_SUCCESS) return rc;
    gi = ref.gi, ci = ref.ci;
  }
  return s->state->with(Access::kWrite, [&](MachineState& m) {
    m.events.push_back(EventRecord{m.next_seq++, ref.gpu, type, data, gi, ci});
    if (m.events.size() > MachineState::kMaxEvents) m.events.erase(m.events.begin());
    return 0;
  });
}

int nvdraMockSetGpuLost(const char* uuid, int lost) {
  return with_profile_gpu(uuid, [&](GpuState& g) { g.lost = lost != 0; });
}

int nvdraMockSetRecoveryAction(const char* uuid, unsigned int action) {
  return with_profile_gpu(uuid, [&](GpuState& g) { g.recovery_action = action; });
}

int nvdraMockSetEventsSupported(const char* uuid, int supported) {
  return with_profile_gpu(uuid, [&](GpuState& g) { g.events_supported = supported != 0; });
}

int nvdraMockSetFabricState(const char* uuid, int state) {
  return with_profile_gpu(uuid, [&](GpuState& g) { g.fabric_state = state < 0 ? -1 : state; });
}

int nvdraMockSetFabricClique(const char* uuid, long long clique_id) {
  return with_profile_gpu(uuid, [&](GpuState& g) { g.fabric_clique = clique_id < 0 ? -1 : clique_id; });
}

int nvdraMockResetState(void) {
  InitScope init;
  if (init.rc() != NVML_SUCCESS) return init.rc();
  auto s = current_session();
  return s->state->with(Access::kWrite, [&](MachineState& m) {
    const uint64_t seq = m.next_seq;  // keep sequence numbers rising so open event sets stay correct
    m = initial_state(s->profile);
    m.next_seq = seq;
    sync_mig_caps(*s, m);
    return 0;
  });
}

int nvdraMockFailNext(const char* function, int rc, unsigned int count) {
  InitScope init;
  if (init.rc() != NVML_SUCCESS) return init.rc();
  if (function == nullptr || (count > 0 && rc == NVML_SUCCESS)) return NVML_ERROR_INVALID_ARGUMENT;
  auto s = current_session();
  return s->state->with(Access::kWrite, [&](MachineState& m) {
    std::erase_if(m.failures, [&](const InjectedFailure& f) { return f.function == function; });
    if (count > 0) m.failures.push_back(InjectedFailure{function, rc, count});
    return 0;
  });
}

const char* nvdraMockLastError(void) {
  tls_text = last_init_error();
  return tls_text.c_str();
}

const char* nvdraMockStatePath(void) {
  auto s = current_session();
  tls_text = s ? s->state->path() : "";
  return tls_text.c_str();
}

}  // extern "C"
