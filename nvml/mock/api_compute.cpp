// Exported NVML: compute-instance profiles and compute instances inside a GPU instance.
#include <cstring>
#include <string>

#include "nvml/mock/api_support.hpp"
#include "nvml/nvml_functions.hpp"

using namespace nvdra::nvml::mock;

namespace {

std::vector<CiRecord> siblings(const DeviceView& v) {
  std::vector<CiRecord> out;
  for (const auto& ci : v.st.cis)
    if (ci.gi_id == v.gi->id) out.push_back(ci);
  return out;
}

nvmlReturn_t create_ci(nvmlGpuInstance_t gi, unsigned profile_id, const nvmlComputeInstancePlacement_t* placement,
                       nvmlComputeInstance_t* out) {
  if (auto rc = take_injected_failure(placement ? "nvmlGpuInstanceCreateComputeInstanceWithPlacement"
                                                : "nvmlGpuInstanceCreateComputeInstance");
      rc != NVML_SUCCESS)
    return rc;
  return with_gi(gi, Access::kWrite, [&](DeviceView& v) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    CiProfileSpec ci;
    const nvmlReturn_t rc = ci_profile(*v.gi_profile, profile_id, &ci);
    if (rc != NVML_SUCCESS) return rc == NVML_ERROR_NOT_SUPPORTED ? NVML_ERROR_INVALID_ARGUMENT : rc;
    const auto sib = siblings(v);
    unsigned start = 0;
    if (placement != nullptr) {
      if (placement->size != ci.slice_count) return NVML_ERROR_INVALID_ARGUMENT;
      start = placement->start;
    } else {
      auto s = first_free_ci_start(ci, sib);
      if (!s) return NVML_ERROR_INSUFFICIENT_RESOURCES;
      start = *s;
    }
    const nvmlReturn_t placed = check_ci_placement(ci, sib, start);
    if (placed != NVML_SUCCESS) return placed;
    const CiRecord rec{v.gi->id, next_ci_id(sib), ci.id, start, ci.slice_count};
    v.st.cis.push_back(rec);
    *out = make_handle<nvmlComputeInstance_t>(Ref{Kind::kCi, v.index(), rec.gi_id, rec.id});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t ci_info(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t* info) {
  return with_ci(ci, Access::kRead, [&](DeviceView& v) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // Upstream takes GetUUID(info.device) as the new MIG device's UUID (nvml.md §1.2): the MIG handle.
    info->device = make_handle<nvmlDevice_t>(Ref{Kind::kMig, v.index(), v.ci->gi_id, v.ci->id});
    info->gpuInstance = make_handle<nvmlGpuInstance_t>(Ref{Kind::kGi, v.index(), v.ci->gi_id});
    info->id = v.ci->id;
    info->profileId = v.ci->profile_id;
    info->placement = nvmlComputeInstancePlacement_t{v.ci->start, v.ci->size};
    return NVML_SUCCESS;
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned int profile,
                                                          unsigned int eng_profile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    if (info == nullptr || eng_profile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    CiProfileSpec ci;
    const nvmlReturn_t rc = ci_profile(*v.gi_profile, profile, &ci);
    if (rc != NVML_SUCCESS) return rc;
    *info = nvmlComputeInstanceProfileInfo_t{ci.id, ci.slice_count, ci.instance_count, ci.multiprocessors,
                                             ci.copy_engines, ci.decoders, ci.encoders, ci.jpeg, ci.ofa};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gi, unsigned int profile,
                                                           unsigned int eng_profile,
                                                           nvmlComputeInstanceProfileInfo_v2_t* info) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    if (info == nullptr || eng_profile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned version = info->version;
    if (version != nvmlComputeInstanceProfileInfo_v2 && version != nvmlComputeInstanceProfileInfo_v3)
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    CiProfileSpec ci;
    const nvmlReturn_t rc = ci_profile(*v.gi_profile, profile, &ci);
    if (rc != NVML_SUCCESS) return rc;
    nvmlComputeInstanceProfileInfo_v3_t out{};  // v2 is v3 without the trailing capabilities word
    out.version = version, out.id = ci.id, out.sliceCount = ci.slice_count, out.instanceCount = ci.instance_count;
    out.multiprocessorCount = ci.multiprocessors, out.sharedCopyEngineCount = ci.copy_engines;
    out.sharedDecoderCount = ci.decoders, out.sharedEncoderCount = ci.encoders, out.sharedJpegCount = ci.jpeg;
    out.sharedOfaCount = ci.ofa;
    const std::string name = "MIG " + mig_profile_name(*v.gi_profile, ci.slice_count);
    std::strncpy(out.name, name.c_str(), sizeof out.name - 1);
    const size_t size = version == nvmlComputeInstanceProfileInfo_v3 ? sizeof(nvmlComputeInstanceProfileInfo_v3_t)
                                                                     : sizeof(nvmlComputeInstanceProfileInfo_v2_t);
    std::memcpy(static_cast<void*>(info), &out, size);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gi, unsigned int profile_id,
                                                                unsigned int* count) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    CiProfileSpec ci;
    if (count == nullptr || ci_profile(*v.gi_profile, profile_id, &ci) != NVML_SUCCESS)
      return NVML_ERROR_INVALID_ARGUMENT;
    auto sim = siblings(v);
    unsigned n = 0;
    while (auto s = first_free_ci_start(ci, sim)) {
      sim.push_back(CiRecord{v.gi->id, next_ci_id(sim), ci.id, *s, ci.slice_count});
      ++n;
    }
    *count = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gi, unsigned int profile_id,
                                                                 nvmlComputeInstancePlacement_t* out,
                                                                 unsigned int* count) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    CiProfileSpec ci;
    if (count == nullptr || ci_profile(*v.gi_profile, profile_id, &ci) != NVML_SUCCESS)
      return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned n = static_cast<unsigned>(ci.starts.size());
    if (out == nullptr) {
      *count = n;
      return NVML_SUCCESS;
    }
    if (*count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) out[i] = nvmlComputeInstancePlacement_t{ci.starts[i], ci.slice_count};
    *count = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned int profile_id,
                                                  nvmlComputeInstance_t* ci) {
  return create_ci(gi, profile_id, nullptr, ci);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gi, unsigned int profile_id,
                                                               const nvmlComputeInstancePlacement_t* placement,
                                                               nvmlComputeInstance_t* ci) {
  if (placement == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  return create_ci(gi, profile_id, placement, ci);
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci) {
  if (auto rc = take_injected_failure("nvmlComputeInstanceDestroy"); rc != NVML_SUCCESS) return rc;
  return with_ci(ci, Access::kWrite, [&](DeviceView& v) {
    const unsigned gi = v.ci->gi_id, id = v.ci->id;
    std::erase_if(v.st.cis, [&](const CiRecord& r) { return r.gi_id == gi && r.id == id; });
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned int profile_id,
                                                nvmlComputeInstance_t* cis, unsigned int* count) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    // As NVML: the CI profile ID must be one the GI offers; the buffer holds its instanceCount.
    if (cis == nullptr || count == nullptr || ci_profile(*v.gi_profile, profile_id, nullptr) != NVML_SUCCESS)
      return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (const auto& ci : siblings(v))
      if (ci.profile_id == profile_id)
        cis[n++] = make_handle<nvmlComputeInstance_t>(Ref{Kind::kCi, v.index(), ci.gi_id, ci.id});
    *count = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gi, unsigned int id, nvmlComputeInstance_t* ci) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (find_ci(v.st, v.gi->id, id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *ci = make_handle<nvmlComputeInstance_t>(Ref{Kind::kCi, v.index(), v.gi->id, id});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t* info) {
  return ci_info(ci, info);
}
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t* info) {
  return ci_info(ci, info);
}

}  // extern "C"
