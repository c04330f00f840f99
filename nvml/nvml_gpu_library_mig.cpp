// NvmlGpuLibrary: MIG read-out and MIG create/destroy.
#include <algorithm>
#include <string>
#include <vector>

#include "agent/base/crash_point.hpp"
#include "nvml/nvml_gpu_library.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {
namespace {

// The CI profile index of the compute instance that spans a GI (nvml.md §3.4).
unsigned full_ci_index(unsigned gi_slices) {
  switch (gi_slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6: return 0x6;
    case 8: return 0x5;
    default: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
  }
}

Error missing(const char* what) {
  return make_error(ErrorCode::kFailedPrecondition,
                    std::string("this NVML library does not export the MIG functions needed to ") + what);
}

}  // namespace

bool NvmlGpuLibrary::mig_supported() const {
  return s_.nvmlDeviceGetMigMode && s_.nvmlDeviceGetGpuInstanceProfileInfo &&
         s_.nvmlDeviceGetGpuInstancePossiblePlacements_v2 && s_.nvmlDeviceGetMaxMigDeviceCount &&
         s_.nvmlDeviceGetMigDeviceHandleByIndex && s_.nvmlDeviceGetGpuInstanceId && s_.nvmlDeviceGetComputeInstanceId &&
         s_.nvmlDeviceGetGpuInstanceById && s_.nvmlGpuInstanceGetInfo && s_.nvmlGpuInstanceGetComputeInstanceById &&
         s_.nvmlComputeInstanceGetInfo_v2;
}

Result<std::vector<MigProfileInfo>> NvmlGpuLibrary::mig_profiles(const std::string& uuid) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  std::vector<MigProfileInfo> out;
  if (!mig_supported()) return out;
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  nvmlMemory_t mem{};
  nvmlReturn_t rc = s_.nvmlDeviceGetMemoryInfo(*dev, &mem);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetMemoryInfo", rc, uuid);
  for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_t info{};
    rc = s_.nvmlDeviceGetGpuInstanceProfileInfo(*dev, index, &info);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (rc != NVML_SUCCESS) return error("nvmlDeviceGetGpuInstanceProfileInfo", rc, uuid);
    MigProfileInfo p;
    p.name = mig_profile_string(index, info.sliceCount, info.sliceCount, info.memorySizeMB, mem.total);
    p.gi_profile_index = index;
    p.gi_profile_id = info.id;
    p.ci_profile_id = full_ci_index(info.sliceCount);
    p.slice_count = info.sliceCount;
    p.instance_count = info.instanceCount;
    p.multiprocessors = info.multiprocessorCount;
    p.copy_engines = info.copyEngineCount;
    p.decoders = info.decoderCount;
    p.encoders = info.encoderCount;
    p.jpeg_engines = info.jpegCount;
    p.ofa_engines = info.ofaCount;
    p.memory_mib = info.memorySizeMB;
    unsigned count = 0;
    rc = s_.nvmlDeviceGetGpuInstancePossiblePlacements_v2(*dev, info.id, nullptr, &count);
    if (rc != NVML_SUCCESS) return error("nvmlDeviceGetGpuInstancePossiblePlacements_v2", rc, uuid);
    std::vector<nvmlGpuInstancePlacement_t> placements(count);
    rc = s_.nvmlDeviceGetGpuInstancePossiblePlacements_v2(*dev, info.id, placements.data(), &count);
    if (rc != NVML_SUCCESS) return error("nvmlDeviceGetGpuInstancePossiblePlacements_v2", rc, uuid);
    for (unsigned i = 0; i < count; ++i) p.placements.push_back(MigPlacement{placements[i].start, placements[i].size});
    out.push_back(std::move(p));
  }
  return out;
}

Result<MigDeviceInfo> NvmlGpuLibrary::read_mig_device(nvmlDevice_t parent, const GpuInfo& pinfo, nvmlDevice_t mig,
                                                      const std::vector<MigProfileInfo>& profiles) {
  MigDeviceInfo m;
  m.parent_uuid = pinfo.uuid;
  m.parent_minor = pinfo.minor;
  m.parent_index = pinfo.index;
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  nvmlReturn_t rc = s_.nvmlDeviceGetUUID(mig, text, sizeof text);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetUUID", rc, "MIG device of " + pinfo.uuid);
  m.uuid = text;
  if ((rc = s_.nvmlDeviceGetGpuInstanceId(mig, &m.gi_id)) != NVML_SUCCESS)
    return error("nvmlDeviceGetGpuInstanceId", rc, m.uuid);
  if ((rc = s_.nvmlDeviceGetComputeInstanceId(mig, &m.ci_id)) != NVML_SUCCESS)
    return error("nvmlDeviceGetComputeInstanceId", rc, m.uuid);
  nvmlGpuInstance_t gi = nullptr;
  if ((rc = s_.nvmlDeviceGetGpuInstanceById(parent, m.gi_id, &gi)) != NVML_SUCCESS)
    return error("nvmlDeviceGetGpuInstanceById", rc, m.uuid);
  nvmlGpuInstanceInfo_t gi_info{};
  if ((rc = s_.nvmlGpuInstanceGetInfo(gi, &gi_info)) != NVML_SUCCESS) return error("nvmlGpuInstanceGetInfo", rc, m.uuid);
  nvmlComputeInstance_t ci = nullptr;
  if ((rc = s_.nvmlGpuInstanceGetComputeInstanceById(gi, m.ci_id, &ci)) != NVML_SUCCESS)
    return error("nvmlGpuInstanceGetComputeInstanceById", rc, m.uuid);
  nvmlComputeInstanceInfo_t ci_info{};
  if ((rc = s_.nvmlComputeInstanceGetInfo_v2(ci, &ci_info)) != NVML_SUCCESS)
    return error("nvmlComputeInstanceGetInfo_v2", rc, m.uuid);
  m.ci_profile_id = ci_info.profileId;
  m.placement = MigPlacement{gi_info.placement.start, gi_info.placement.size};
  auto it = std::find_if(profiles.begin(), profiles.end(),
                         [&](const MigProfileInfo& p) { return p.gi_profile_id == gi_info.profileId; });
  if (it == profiles.end())
    return make_error(ErrorCode::kInternal, "MIG device " + m.uuid + " on " + pinfo.uuid + " has GPU-instance profile " +
                                                std::to_string(gi_info.profileId) + ", which the GPU does not list");
  m.profile = *it;
  return m;
}

Result<std::vector<MigDeviceInfo>> NvmlGpuLibrary::mig_devices(const std::string& uuid) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  std::vector<MigDeviceInfo> out;
  if (!mig_supported()) return out;
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  unsigned max = 0;
  nvmlReturn_t rc = s_.nvmlDeviceGetMaxMigDeviceCount(*dev, &max);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetMaxMigDeviceCount", rc, uuid);
  if (max == 0) return out;
  GpuInfo pinfo;
  pinfo.uuid = uuid;
  if ((rc = s_.nvmlDeviceGetMinorNumber(*dev, &pinfo.minor)) != NVML_SUCCESS)
    return error("nvmlDeviceGetMinorNumber", rc, uuid);
  unsigned count = 0;
  if (s_.nvmlDeviceGetCount_v2(&count) == NVML_SUCCESS) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t d = nullptr;
      if (s_.nvmlDeviceGetHandleByIndex_v2(i, &d) == NVML_SUCCESS && d == *dev) pinfo.index = i;
    }
  }
  auto profiles = mig_profiles(uuid);
  if (!profiles) return profiles.error();
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    rc = s_.nvmlDeviceGetMigDeviceHandleByIndex(*dev, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT) continue;  // empty slot
    if (rc != NVML_SUCCESS) return error("nvmlDeviceGetMigDeviceHandleByIndex", rc, uuid);
    auto m = read_mig_device(*dev, pinfo, mig, *profiles);
    // Destroyed between the index lookup and the reads (another client changed the layout):
    // it is simply gone, as it would be in a fresh listing.
    if (!m && (m.error().code == ErrorCode::kInvalidArgument || m.error().code == ErrorCode::kNotFound)) continue;
    if (!m) return m.error();
    out.push_back(std::move(m).value());
  }
  return out;
}

Result<MigModeState> NvmlGpuLibrary::mig_mode(const std::string& uuid) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (s_.nvmlDeviceGetMigMode == nullptr) return missing("read the MIG mode");
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  unsigned current = 0, pending = 0;
  const nvmlReturn_t rc = s_.nvmlDeviceGetMigMode(*dev, &current, &pending);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetMigMode", rc, uuid);
  return MigModeState{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

Result<MigModeChange> NvmlGpuLibrary::set_mig_mode(const std::string& uuid, bool enable) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (s_.nvmlDeviceSetMigMode == nullptr) return missing("change the MIG mode");
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  nvmlReturn_t activation = NVML_SUCCESS;
  const nvmlReturn_t rc =
      s_.nvmlDeviceSetMigMode(*dev, enable ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &activation);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceSetMigMode", rc, uuid);
  return MigModeChange{activation == NVML_SUCCESS, s_.nvmlErrorString(activation)};
}

Result<MigDeviceInfo> NvmlGpuLibrary::create_mig_device(const std::string& uuid, const MigDeviceRequest& req) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (!mig_supported() || !s_.nvmlDeviceCreateGpuInstanceWithPlacement || !s_.nvmlGpuInstanceCreateComputeInstance ||
      !s_.nvmlGpuInstanceGetComputeInstanceProfileInfo || !s_.nvmlGpuInstanceDestroy)
    return missing("create MIG devices");
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  auto profiles = mig_profiles(uuid);
  if (!profiles) return profiles.error();
  auto prof = std::find_if(profiles->begin(), profiles->end(),
                           [&](const MigProfileInfo& p) { return p.gi_profile_id == req.gi_profile_id; });
  if (prof == profiles->end())
    return make_error(ErrorCode::kInvalidArgument, uuid + " offers no GPU-instance profile ID " +
                                                       std::to_string(req.gi_profile_id));
  auto pl = std::find_if(prof->placements.begin(), prof->placements.end(),
                         [&](const MigPlacement& p) { return p.start == req.placement_start; });
  if (pl == prof->placements.end())
    return make_error(ErrorCode::kInvalidArgument, prof->name + " on " + uuid + " cannot start at memory slice " +
                                                       std::to_string(req.placement_start));
  const std::string subject = uuid + ", profile " + std::to_string(req.gi_profile_id) + ", start " +
                              std::to_string(req.placement_start);
  const nvmlGpuInstancePlacement_t placement{pl->start, pl->size};
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t rc = s_.nvmlDeviceCreateGpuInstanceWithPlacement(*dev, req.gi_profile_id, &placement, &gi);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceCreateGpuInstanceWithPlacement", rc, subject);
  crash_point("mig-dynamic.prepare.after-gi-create");  // a GPU instance without its compute instance
  nvmlComputeInstanceProfileInfo_t ci_prof{};
  nvmlComputeInstance_t ci = nullptr;
  const char* failed = "nvmlGpuInstanceGetComputeInstanceProfileInfo";
  rc = s_.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, req.ci_profile_index, req.ci_engine_profile, &ci_prof);
  if (rc == NVML_SUCCESS) {
    failed = "nvmlGpuInstanceCreateComputeInstance";
    rc = s_.nvmlGpuInstanceCreateComputeInstance(gi, ci_prof.id, &ci);
  }
  if (rc != NVML_SUCCESS) {
    s_.nvmlGpuInstanceDestroy(gi);  // leave no GPU instance without its compute instance
    return error(failed, rc, subject);
  }
  crash_point("mig-dynamic.prepare.after-ci-create");  // the MIG device exists, no checkpoint names its ids
  nvmlComputeInstanceInfo_t ci_info{};
  if ((rc = s_.nvmlComputeInstanceGetInfo_v2(ci, &ci_info)) != NVML_SUCCESS)
    return error("nvmlComputeInstanceGetInfo_v2", rc, subject);
  GpuInfo pinfo;
  pinfo.uuid = uuid;
  s_.nvmlDeviceGetMinorNumber(*dev, &pinfo.minor);
  // upstream reads the new MIG UUID through ComputeInstanceInfo.device (nvml.md §1.2).
  return read_mig_device(*dev, pinfo, ci_info.device, *profiles);
}

Status NvmlGpuLibrary::destroy_mig_device(const std::string& uuid, unsigned gi_id, unsigned ci_id) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (!mig_supported() || !s_.nvmlComputeInstanceDestroy || !s_.nvmlGpuInstanceDestroy)
    return missing("destroy MIG devices");
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  const std::string subject = uuid + ", GI " + std::to_string(gi_id) + ", CI " + std::to_string(ci_id);
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t rc = s_.nvmlDeviceGetGpuInstanceById(*dev, gi_id, &gi);
  // Upstream treats NOT_FOUND and NOT_SUPPORTED (MIG disabled) as "already deleted".
  if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED) return {};
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetGpuInstanceById", rc, subject);
  nvmlComputeInstance_t ci = nullptr;
  rc = s_.nvmlGpuInstanceGetComputeInstanceById(gi, ci_id, &ci);
  if (rc == NVML_SUCCESS) {
    rc = s_.nvmlComputeInstanceDestroy(ci);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) return error("nvmlComputeInstanceDestroy", rc, subject);
    crash_point("mig-dynamic.unprepare.after-ci-destroy");  // a bare GPU instance
  } else if (rc != NVML_ERROR_NOT_FOUND) {
    return error("nvmlGpuInstanceGetComputeInstanceById", rc, subject);
  }
  rc = s_.nvmlGpuInstanceDestroy(gi);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) return error("nvmlGpuInstanceDestroy", rc, subject);
  crash_point("mig-dynamic.unprepare.after-gi-destroy");  // gone; MIG mode (Hopper) not yet off
  return {};
}

Result<bool> NvmlGpuLibrary::has_compute_instance(nvmlGpuInstance_t gi, const std::string& subject) {
  // NVML lists CIs per CI profile ID; a GI offers only some of the profile indices.
  for (unsigned index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlComputeInstanceProfileInfo_t prof{};
    nvmlReturn_t rc = s_.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, index, 0, &prof);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (rc != NVML_SUCCESS) return error("nvmlGpuInstanceGetComputeInstanceProfileInfo", rc, subject);
    std::vector<nvmlComputeInstance_t> cis(std::max(prof.instanceCount, 1u));  // NVML fills up to instanceCount
    unsigned count = 0;
    rc = s_.nvmlGpuInstanceGetComputeInstances(gi, prof.id, cis.data(), &count);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (rc != NVML_SUCCESS) return error("nvmlGpuInstanceGetComputeInstances", rc, subject);
    if (count > 0) return true;
  }
  return false;
}

Result<std::vector<BareGpuInstance>> NvmlGpuLibrary::bare_gpu_instances(const std::string& uuid) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  std::vector<BareGpuInstance> out;
  if (!mig_supported()) return out;
  if (!s_.nvmlDeviceGetGpuInstances || !s_.nvmlGpuInstanceGetComputeInstances ||
      !s_.nvmlGpuInstanceGetComputeInstanceProfileInfo)
    return missing("list GPU instances");
  auto mode = mig_mode(uuid);
  if (!mode) return mode.error();
  if (!mode->current_enabled) return out;
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  auto profiles = mig_profiles(uuid);
  if (!profiles) return profiles.error();
  for (const auto& p : *profiles) {
    std::vector<nvmlGpuInstance_t> gis(std::max(p.instance_count, 1u));  // NVML fills up to instanceCount
    unsigned count = 0;
    nvmlReturn_t rc = s_.nvmlDeviceGetGpuInstances(*dev, p.gi_profile_id, gis.data(), &count);
    if (rc == NVML_ERROR_NOT_SUPPORTED) return out;  // MIG went off meanwhile: no instance at all
    if (rc != NVML_SUCCESS)
      return error("nvmlDeviceGetGpuInstances", rc, uuid + ", profile " + std::to_string(p.gi_profile_id));
    for (unsigned i = 0; i < count && i < gis.size(); ++i) {
      nvmlGpuInstanceInfo_t info{};
      rc = s_.nvmlGpuInstanceGetInfo(gis[i], &info);
      // Destroyed since the listing (another client): simply gone.
      if (rc == NVML_ERROR_INVALID_ARGUMENT || rc == NVML_ERROR_NOT_FOUND) continue;
      if (rc != NVML_SUCCESS) return error("nvmlGpuInstanceGetInfo", rc, uuid);
      const std::string subject = uuid + ", GI " + std::to_string(info.id);
      auto used = has_compute_instance(gis[i], subject);
      if (!used && (used.error().code == ErrorCode::kInvalidArgument || used.error().code == ErrorCode::kNotFound))
        continue;
      if (!used) return used.error();
      if (!*used)
        out.push_back(BareGpuInstance{info.id, info.profileId, MigPlacement{info.placement.start, info.placement.size}});
    }
  }
  return out;
}

Status NvmlGpuLibrary::destroy_gpu_instance(const std::string& uuid, unsigned gi_id) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (!mig_supported() || !s_.nvmlGpuInstanceDestroy) return missing("destroy GPU instances");
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  const std::string subject = uuid + ", GI " + std::to_string(gi_id);
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t rc = s_.nvmlDeviceGetGpuInstanceById(*dev, gi_id, &gi);
  if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED) return {};  // as destroy_mig_device
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetGpuInstanceById", rc, subject);
  rc = s_.nvmlGpuInstanceDestroy(gi);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) return error("nvmlGpuInstanceDestroy", rc, subject);
  return {};
}

}  // namespace nvdra::nvml
