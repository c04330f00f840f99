// NvmlGpuLibrary: device health — the EventWatch over an nvmlEventSet_t, and the recovery action.
#include <algorithm>

#include "nvml/nvml_gpu_library.hpp"

namespace nvdra::nvml {
namespace {

class NvmlEventWatch final : public EventWatch {
 public:
  NvmlEventWatch(NvmlGpuLibrary& lib, nvmlEventSet_t set) : lib_(lib), set_(set) {}
  ~NvmlEventWatch() override { lib_.symbols().nvmlEventSetFree(set_); }

  const std::vector<std::pair<std::string, Error>>& unmonitored() const override { return unmonitored_; }

  Result<WaitOutcome> wait(std::chrono::milliseconds timeout) override {
    const auto& s = lib_.symbols();
    nvmlEventData_t data{};
    const auto ms = static_cast<unsigned>(std::clamp<int64_t>(timeout.count(), 0, 0x7FFFFFFF));
    const nvmlReturn_t rc = s.nvmlEventSetWait_v2(set_, &data, ms);
    if (rc == NVML_ERROR_TIMEOUT) return WaitOutcome{WaitOutcome::Kind::kTimeout, {}};
    if (rc == NVML_ERROR_GPU_IS_LOST) return WaitOutcome{WaitOutcome::Kind::kGpuLost, {}};
    if (rc != NVML_SUCCESS) return lib_.error("nvmlEventSetWait_v2", rc, "");
    WaitOutcome out{WaitOutcome::Kind::kEvent, {}};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    const nvmlReturn_t urc = s.nvmlDeviceGetUUID(data.device, uuid, sizeof uuid);
    if (urc == NVML_ERROR_GPU_IS_LOST) return WaitOutcome{WaitOutcome::Kind::kGpuLost, {}};
    if (urc != NVML_SUCCESS) return lib_.error("nvmlDeviceGetUUID", urc, "event device");
    out.event = GpuEvent{uuid, data.eventType, data.eventData, data.gpuInstanceId, data.computeInstanceId};
    return out;
  }

  std::vector<std::pair<std::string, Error>> unmonitored_;

 private:
  NvmlGpuLibrary& lib_;
  nvmlEventSet_t set_;
};

}  // namespace

std::string recovery_action_name(unsigned action) {
  switch (action) {
    case kRecoveryNone: return "none";
    case kRecoveryGpuReset: return "gpu-reset";
    case kRecoveryNodeReboot: return "node-reboot";
    case kRecoveryDrainP2p: return "drain-p2p";
    case kRecoveryDrainAndReset: return "drain-and-reset";
    default: return std::to_string(action);
  }
}

Result<std::optional<unsigned>> NvmlGpuLibrary::recovery_action(const std::string& uuid) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (!s_.nvmlDeviceGetFieldValues) return std::optional<unsigned>{};
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  nvmlFieldValue_t v{};
  v.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
  const nvmlReturn_t rc = s_.nvmlDeviceGetFieldValues(*dev, 1, &v);
  if (rc == NVML_ERROR_NOT_SUPPORTED) return std::optional<unsigned>{};
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetFieldValues", rc, uuid);
  // The per-field status says whether this driver knows the field at all.
  if (v.nvmlReturn == NVML_ERROR_NOT_SUPPORTED || v.nvmlReturn == NVML_ERROR_INVALID_ARGUMENT)
    return std::optional<unsigned>{};
  if (v.nvmlReturn != NVML_SUCCESS) return error("nvmlDeviceGetFieldValues", v.nvmlReturn, uuid + " recovery action");
  return std::optional<unsigned>{v.value.uiVal};
}

Result<std::unique_ptr<EventWatch>> make_nvml_event_watch(NvmlGpuLibrary& lib, const std::vector<std::string>& uuids,
                                                          uint64_t event_types) {
  const auto& s = lib.symbols();
  if (!s.nvmlEventSetCreate || !s.nvmlDeviceGetSupportedEventTypes || !s.nvmlDeviceRegisterEvents ||
      !s.nvmlEventSetWait_v2 || !s.nvmlEventSetFree)
    return make_error(ErrorCode::kFailedPrecondition, "this NVML library does not export the event functions");
  nvmlEventSet_t set = nullptr;
  const nvmlReturn_t rc = s.nvmlEventSetCreate(&set);
  if (rc != NVML_SUCCESS) return lib.error("nvmlEventSetCreate", rc, "");
  auto watch = std::make_unique<NvmlEventWatch>(lib, set);
  for (const auto& uuid : uuids) {
    auto dev = lib.handle(uuid);
    if (!dev) {
      watch->unmonitored_.emplace_back(uuid, dev.error());
      continue;
    }
    unsigned long long supported = 0;
    nvmlReturn_t r = s.nvmlDeviceGetSupportedEventTypes(*dev, &supported);
    if (r != NVML_SUCCESS) {
      watch->unmonitored_.emplace_back(uuid, lib.error("nvmlDeviceGetSupportedEventTypes", r, uuid));
      continue;
    }
    r = s.nvmlDeviceRegisterEvents(*dev, event_types & supported, set);
    if (r != NVML_SUCCESS) watch->unmonitored_.emplace_back(uuid, lib.error("nvmlDeviceRegisterEvents", r, uuid));
  }
  return std::unique_ptr<EventWatch>(std::move(watch));
}

}  // namespace nvdra::nvml
