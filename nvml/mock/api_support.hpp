#pragma once
// Shared plumbing of the exported NVML functions: resolve a handle against the current session
// and state, under the state lock, and hand the function a view of the device it names.
#include <utility>

#include "nvml/mock/mock_machine.hpp"

namespace nvdra::nvml::mock {

using Access = StateFile::Access;

struct DeviceView {
  const Session& session;
  const GpuSpec& spec;
  MachineState& machine;
  GpuState& st;
  Ref ref;
  const GiRecord* gi = nullptr;  // for MIG-device, GI and CI handles
  const CiRecord* ci = nullptr;  // for MIG-device and CI handles
  const GiProfileSpec* gi_profile = nullptr;

  bool is_mig() const { return ref.kind == Kind::kMig; }
  unsigned index() const { return ref.gpu; }
};

const GiRecord* find_gi(const GpuState& st, unsigned id);

// Consumes one failure queued for `function` (nvdraMockFailNext); NVML_SUCCESS when none is.
nvmlReturn_t take_injected_failure(const char* function);
const CiRecord* find_ci(const GpuState& st, unsigned gi, unsigned ci);

template <class F>
nvmlReturn_t with_handle(const void* h, Kind a, Kind b, Access access, F&& fn) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  const auto r = decode_handle(h);
  if (!r || (r->kind != a && r->kind != b) || r->gpu >= s->profile.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  return static_cast<nvmlReturn_t>(s->state->with(access, [&](MachineState& m) -> int {
    GpuState& st = m.gpus[r->gpu];
    if (st.lost) return NVML_ERROR_GPU_IS_LOST;
    DeviceView v{*s, s->profile.gpus[r->gpu], m, st, *r};
    if (r->kind != Kind::kGpu) {
      v.gi = find_gi(st, r->gi);
      if (v.gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;  // destroyed since the handle was made
      v.gi_profile = v.spec.product->profile_by_id(v.gi->profile_id);
      if (r->kind != Kind::kGi) {
        v.ci = find_ci(st, r->gi, r->ci);
        if (v.ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
      }
    }
    const nvmlReturn_t rc = fn(v);
    if (access == Access::kWrite && rc == NVML_SUCCESS) sync_mig_caps(*s, m);
    return rc;
  }));
}

template <class F>
nvmlReturn_t with_device(nvmlDevice_t h, Access access, F&& fn) {
  return with_handle(h, Kind::kGpu, Kind::kMig, access, std::forward<F>(fn));
}
template <class F>
nvmlReturn_t with_gpu(nvmlDevice_t h, Access access, F&& fn) {
  return with_handle(h, Kind::kGpu, Kind::kGpu, access, std::forward<F>(fn));
}
template <class F>
nvmlReturn_t with_gi(nvmlGpuInstance_t h, Access access, F&& fn) {
  return with_handle(h, Kind::kGi, Kind::kGi, access, std::forward<F>(fn));
}
template <class F>
nvmlReturn_t with_ci(nvmlComputeInstance_t h, Access access, F&& fn) {
  return with_handle(h, Kind::kCi, Kind::kCi, access, std::forward<F>(fn));
}

// The CIs of a GPU in MIG-device index order (by GI id, then CI id).
std::vector<CiRecord> mig_devices_in_order(const GpuState& st);
// The MIG device's profile string ("3g.20gb", "1c.3g.20gb").
std::string mig_profile_of(const DeviceView& v);

}  // namespace nvdra::nvml::mock
