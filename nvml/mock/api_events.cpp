// Exported NVML: event sets. Events live in the state file (injected by the test hooks), so a
// waiter in one process sees an XID injected from another.
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "nvml/mock/api_support.hpp"
#include "nvml/nvml_functions.hpp"

using namespace nvdra::nvml::mock;

struct nvmlEventSet_st {
  std::mutex mu;
  std::map<unsigned, unsigned long long> masks;  // GPU index -> registered event types
  uint64_t last_seq = 0;                          // events up to here were delivered or predate the set
};

namespace {

struct Registry {
  std::mutex mu;
  std::set<nvmlEventSet_t> sets;
};
Registry& registry() {
  static Registry r;
  return r;
}
bool known(nvmlEventSet_t set) {
  std::lock_guard lock(registry().mu);
  return registry().sets.count(set) != 0;
}

// Polling interval of EventSetWait: short against upstream's 5 s waits, long against a busy loop.
constexpr auto kPoll = std::chrono::milliseconds(2);

}  // namespace

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* created = new nvmlEventSet_st();
  s->state->with(Access::kRead, [&](MachineState& m) {
    created->last_seq = m.next_seq - 1;
    return 0;
  });
  std::lock_guard lock(registry().mu);
  registry().sets.insert(created);
  *set = created;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (!current_session()) return NVML_ERROR_UNINITIALIZED;
  {
    std::lock_guard lock(registry().mu);
    if (registry().sets.erase(set) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  }
  delete set;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* types) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *types = v.spec.product->supported_events;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set) {
  if (!known(set)) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.st.events_supported || (types & ~v.spec.product->supported_events) != 0) return NVML_ERROR_NOT_SUPPORTED;
    std::lock_guard lock(set->mu);
    set->masks[v.index()] |= types;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (data == nullptr || !known(set)) return NVML_ERROR_INVALID_ARGUMENT;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::map<unsigned, unsigned long long> masks;
    uint64_t last = 0;
    {
      std::lock_guard lock(set->mu);
      masks = set->masks;
      last = set->last_seq;
    }
    std::optional<EventRecord> hit;
    uint64_t seen = last;
    bool lost = false;
    s->state->with(Access::kRead, [&](MachineState& m) {
      for (const auto& [gpu, mask] : masks) lost = lost || (gpu < m.gpus.size() && m.gpus[gpu].lost);
      for (const auto& e : m.events) {
        if (e.seq <= last) continue;
        seen = e.seq;
        auto it = masks.find(e.gpu);
        if (it != masks.end() && (it->second & e.type) != 0) {
          hit = e;
          break;
        }
      }
      return 0;
    });
    {
      std::lock_guard lock(set->mu);
      if (seen > set->last_seq) set->last_seq = seen;
    }
    if (hit) {
      data->device = make_handle<nvmlDevice_t>(Ref{Kind::kGpu, hit->gpu});
      data->eventType = hit->type;
      data->eventData = hit->data;
      data->gpuInstanceId = hit->gi;
      data->computeInstanceId = hit->ci;
      return NVML_SUCCESS;
    }
    if (lost) return NVML_ERROR_GPU_IS_LOST;
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(kPoll);
  }
}

// Only the recovery action is modelled; every other field answers NOT_SUPPORTED in its entry.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (count < 0 || (count > 0 && values == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < count; ++i) {
      auto& f = values[i];
      f.timestamp = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
      f.latencyUsec = 0;
      if (f.fieldId != NVML_FI_DEV_GET_GPU_RECOVERY_ACTION || v.is_mig()) {
        f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        continue;
      }
      f.nvmlReturn = NVML_SUCCESS;
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      f.value.uiVal = v.st.recovery_action;
    }
    return NVML_SUCCESS;
  });
}

// v1 callers pass the 24-byte struct without GPU/compute instance ids.
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  if (data == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  nvmlEventData_t full{};
  const nvmlReturn_t rc = nvmlEventSetWait_v2(set, &full, timeout_ms);
  if (rc == NVML_SUCCESS) std::memcpy(static_cast<void*>(data), &full, offsetof(nvmlEventData_t, gpuInstanceId));
  return rc;
}

}  // extern "C"
