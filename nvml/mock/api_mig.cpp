// Exported NVML: MIG mode, GPU-instance profiles, GPU instances, MIG device handles.
#include <cstring>
#include <string>

#include "nvml/mock/api_support.hpp"
#include "nvml/nvml_functions.hpp"

using namespace nvdra::nvml::mock;

namespace {

constexpr unsigned kMaxMigDevices = 7;

void fill_v1(const GiProfileSpec& p, nvmlGpuInstanceProfileInfo_t* info) {
  std::memset(info, 0, sizeof *info);
  info->id = p.id;
  info->isP2pSupported = 0;
  info->sliceCount = p.slice_count;
  info->instanceCount = p.instance_count;
  info->multiprocessorCount = p.multiprocessors;
  info->copyEngineCount = p.copy_engines;
  info->decoderCount = p.decoders;
  info->encoderCount = p.encoders;
  info->jpegCount = p.jpeg;
  info->ofaCount = p.ofa;
  info->memorySizeMB = p.memory_mib;
}

// v2 and v3 differ in layout (v3 drops isP2pSupported), so each is written through its own struct.
nvmlReturn_t fill_versioned(const GiProfileSpec& p, nvmlGpuInstanceProfileInfo_v2_t* info) {
  const unsigned version = info->version;
  const std::string name = "MIG " + p.name;
  if (version == nvmlGpuInstanceProfileInfo_v2) {
    nvmlGpuInstanceProfileInfo_v2_t out{};
    out.version = version, out.id = p.id, out.sliceCount = p.slice_count, out.instanceCount = p.instance_count;
    out.multiprocessorCount = p.multiprocessors, out.copyEngineCount = p.copy_engines, out.decoderCount = p.decoders;
    out.encoderCount = p.encoders, out.jpegCount = p.jpeg, out.ofaCount = p.ofa, out.memorySizeMB = p.memory_mib;
    std::strncpy(out.name, name.c_str(), sizeof out.name - 1);
    *info = out;
    return NVML_SUCCESS;
  }
  if (version == nvmlGpuInstanceProfileInfo_v3) {
    nvmlGpuInstanceProfileInfo_v3_t out{};
    out.version = version, out.id = p.id, out.sliceCount = p.slice_count, out.instanceCount = p.instance_count;
    out.multiprocessorCount = p.multiprocessors, out.copyEngineCount = p.copy_engines, out.decoderCount = p.decoders;
    out.encoderCount = p.encoders, out.jpegCount = p.jpeg, out.ofaCount = p.ofa, out.memorySizeMB = p.memory_mib;
    std::strncpy(out.name, name.c_str(), sizeof out.name - 1);
    out.capabilities = 0;
    std::memcpy(static_cast<void*>(info), &out, sizeof out);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

nvmlReturn_t placements(nvmlDevice_t device, unsigned profile_id, nvmlGpuInstancePlacement_t* out, unsigned* count) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GiProfileSpec* p = v.spec.product->profile_by_id(profile_id);
    if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned n = static_cast<unsigned>(p->placement_starts.size());
    if (out == nullptr) {
      *count = n;
      return NVML_SUCCESS;
    }
    if (*count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) out[i] = nvmlGpuInstancePlacement_t{p->placement_starts[i], p->placement_size};
    *count = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t create_gi(nvmlDevice_t device, unsigned profile_id, const nvmlGpuInstancePlacement_t* placement,
                       nvmlGpuInstance_t* gi) {
  if (auto rc = take_injected_failure(placement ? "nvmlDeviceCreateGpuInstanceWithPlacement"
                                                : "nvmlDeviceCreateGpuInstance");
      rc != NVML_SUCCESS)
    return rc;
  return with_gpu(device, Access::kWrite, [&](DeviceView& v) {
    const ProductSpec& product = *v.spec.product;
    if (!product.mig_capable || v.st.mig_current != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
    const GiProfileSpec* p = product.profile_by_id(profile_id);
    if (gi == nullptr || p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned start = 0;
    if (placement != nullptr) {
      if (placement->size != p->placement_size) return NVML_ERROR_INVALID_ARGUMENT;
      start = placement->start;
    } else {
      auto free_start = first_free_gi_start(product, v.st.gis, profile_id);
      if (!free_start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
      start = *free_start;
    }
    const nvmlReturn_t rc = check_gi_placement(product, v.st.gis, profile_id, start, nullptr);
    if (rc != NVML_SUCCESS) return rc;
    const GiRecord rec{next_gi_id(v.st.gis, *p), profile_id, start, p->placement_size};
    v.st.gis.push_back(rec);
    *gi = make_handle<nvmlGpuInstance_t>(Ref{Kind::kGi, v.index(), rec.id});
    return NVML_SUCCESS;
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *current = v.st.mig_current;
    *pending = v.st.mig_pending;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activation) {
  if (auto rc = take_injected_failure("nvmlDeviceSetMigMode"); rc != NVML_SUCCESS) return rc;
  return with_gpu(device, Access::kWrite, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (activation == nullptr || mode > NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_INVALID_ARGUMENT;
    if (mode == NVML_DEVICE_MIG_DISABLE && !v.st.gis.empty()) return NVML_ERROR_IN_USE;
    v.st.mig_pending = mode;
    // Ampere needs a GPU reset to switch; where the profile says reset is impossible (VM
    // passthrough) the change stays pending, as on real hardware. Hopper+ switches at once.
    if (v.spec.mig_reset_required && v.spec.product->architecture < NVML_DEVICE_ARCH_HOPPER &&
        mode != v.st.mig_current) {
      *activation = NVML_ERROR_RESET_REQUIRED;
    } else {
      v.st.mig_current = mode;
      *activation = NVML_SUCCESS;
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int index,
                                                 nvmlGpuInstanceProfileInfo_t* info) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (info == nullptr || index >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const GiProfileSpec* p = v.spec.product->profile_by_index(index);
    if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    fill_v1(*p, info);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int index,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (info == nullptr || index >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const GiProfileSpec* p = v.spec.product->profile_by_index(index);
    if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    return fill_versioned(*p, info);
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profile_id,
                                                      nvmlGpuInstanceProfileInfo_v2_t* info) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    const GiProfileSpec* p = v.spec.product->profile_by_id(profile_id);
    if (info == nullptr || p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return fill_versioned(*p, info);
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profile_id,
                                                           nvmlGpuInstancePlacement_t* out, unsigned int* count) {
  return placements(device, profile_id, out, count);
}
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(nvmlDevice_t device, unsigned int profile_id,
                                                        nvmlGpuInstancePlacement_t* out, unsigned int* count) {
  return placements(device, profile_id, out, count);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profile_id,
                                                       unsigned int* count) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    const ProductSpec& product = *v.spec.product;
    if (!product.mig_capable || v.st.mig_current != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
    const GiProfileSpec* p = product.profile_by_id(profile_id);
    if (count == nullptr || p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::vector<GiRecord> sim = v.st.gis;
    unsigned n = 0;
    while (auto s = first_free_gi_start(product, sim, profile_id)) {
      sim.push_back(GiRecord{next_gi_id(sim, *p), profile_id, *s, p->placement_size});
      ++n;
    }
    *count = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstance_t* gi) {
  return create_gi(device, profile_id, nullptr, gi);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profile_id,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gi) {
  if (placement == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  return create_gi(device, profile_id, placement, gi);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi) {
  if (auto rc = take_injected_failure("nvmlGpuInstanceDestroy"); rc != NVML_SUCCESS) return rc;
  return with_gi(gi, Access::kWrite, [&](DeviceView& v) {
    for (const auto& ci : v.st.cis)
      if (ci.gi_id == v.gi->id) return NVML_ERROR_IN_USE;
    const unsigned id = v.gi->id;
    std::erase_if(v.st.gis, [id](const GiRecord& r) { return r.id == id; });
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstance_t* gis,
                                       unsigned int* count) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable || v.st.mig_current != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
    if (gis == nullptr || count == nullptr || v.spec.product->profile_by_id(profile_id) == nullptr)
      return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (const auto& gi : v.st.gis)
      if (gi.profile_id == profile_id) gis[n++] = make_handle<nvmlGpuInstance_t>(Ref{Kind::kGi, v.index(), gi.id});
    *count = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gi) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable || v.st.mig_current != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
    if (gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (find_gi(v.st, id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *gi = make_handle<nvmlGpuInstance_t>(Ref{Kind::kGi, v.index(), id});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t* info) {
  return with_gi(gi, Access::kRead, [&](DeviceView& v) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    info->device = make_handle<nvmlDevice_t>(Ref{Kind::kGpu, v.index()});
    info->id = v.gi->id;
    info->profileId = v.gi->profile_id;
    info->placement = nvmlGpuInstancePlacement_t{v.gi->start, v.gi->size};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (v.spec.product->mig_capable && v.st.mig_current == NVML_DEVICE_MIG_ENABLE) ? kMaxMigDevices : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (!v.spec.product->mig_capable || v.st.mig_current != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
    if (mig == nullptr || index >= kMaxMigDevices) return NVML_ERROR_INVALID_ARGUMENT;
    const auto order = mig_devices_in_order(v.st);
    if (index >= order.size()) return NVML_ERROR_NOT_FOUND;
    *mig = make_handle<nvmlDevice_t>(Ref{Kind::kMig, v.index(), order[index].gi_id, order[index].id});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!v.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *id = v.gi->id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!v.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *id = v.ci->id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* is_mig) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (is_mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *is_mig = v.is_mig() ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t* device) {
  return with_device(mig, Access::kRead, [&](DeviceView& v) {
    if (device == nullptr || !v.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = make_handle<nvmlDevice_t>(Ref{Kind::kGpu, v.index()});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* a) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (a == nullptr || !v.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    CiProfileSpec ci;
    if (ci_profile(*v.gi_profile, v.ci->profile_id, &ci) != NVML_SUCCESS) return NVML_ERROR_UNKNOWN;
    a->multiprocessorCount = ci.multiprocessors;
    a->sharedCopyEngineCount = ci.copy_engines;
    a->sharedDecoderCount = ci.decoders;
    a->sharedEncoderCount = ci.encoders;
    a->sharedJpegCount = ci.jpeg;
    a->sharedOfaCount = ci.ofa;
    a->gpuInstanceSliceCount = v.gi_profile->slice_count;
    a->computeInstanceSliceCount = ci.slice_count;
    a->memorySizeMB = v.gi_profile->memory_mib;
    return NVML_SUCCESS;
  });
}

}  // extern "C"
