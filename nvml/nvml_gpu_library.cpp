#include "nvml/nvml_gpu_library.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "agent/base/log.hpp"
#include "nvml/library_locator.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {
namespace {

ErrorCode code_for(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_NOT_FOUND: return ErrorCode::kNotFound;
    case NVML_ERROR_INVALID_ARGUMENT: return ErrorCode::kInvalidArgument;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return ErrorCode::kFailedPrecondition;
    case NVML_ERROR_IN_USE:
    case NVML_ERROR_TIMEOUT:
    case NVML_ERROR_GPU_IS_LOST:
    // The kernel module gone or replaced under the session (a driver upgrade): over once NVML is opened again.
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return ErrorCode::kUnavailable;
    case NVML_ERROR_NO_PERMISSION: return ErrorCode::kPermissionDenied;
    default: return ErrorCode::kInternal;
  }
}

std::string uuid_string(const unsigned char* b) {
  char out[40];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

}  // namespace

NvmlGpuLibrary::NvmlGpuLibrary(void* dl, std::string path, NvmlSymbols symbols)
    : dl_(dl), path_(std::move(path)), s_(std::move(symbols)) {}

NvmlGpuLibrary::~NvmlGpuLibrary() {
  s_.nvmlShutdown();
  ::dlclose(dl_);
}

Error NvmlGpuLibrary::error(const char* call, nvmlReturn_t rc, const std::string& subject) const {
  return make_error(code_for(rc), std::string(call) + "(" + subject + "): " + s_.nvmlErrorString(rc));
}

Result<nvmlDevice_t> NvmlGpuLibrary::handle(const std::string& uuid) const {
  nvmlDevice_t dev = nullptr;
  const nvmlReturn_t rc = s_.nvmlDeviceGetHandleByUUID(uuid.c_str(), &dev);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetHandleByUUID", rc, uuid);
  return dev;
}

Result<CallGate::Shut> NvmlGpuLibrary::release_gpus(const std::string& why) {
  // No call of this library may attach a GPU again until the caller is done: the gate waits for the
  // calls inside (none of them then fails with NVML's "Uninitialized" in the restart below).
  CallGate::Shut shut = gate_.shut(why);
  // NVML counts nvmlInit calls and detaches its GPUs only when the count reaches zero: end the
  // session, then start one that attaches nothing. (An event watch's wait is not gated: with
  // PassthroughSupport no event watch runs, the gates exclude it.)
  s_.nvmlShutdown();
  const nvmlReturn_t rc = s_.nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH);
  if (rc != NVML_SUCCESS) return error("nvmlInitWithFlags", rc, "NO_GPUS|NO_ATTACH");
  return shut;
}

Status NvmlGpuLibrary::enable_persistence(const std::string& uuid) {
  auto pass = gate_.enter("GPU " + uuid);
  if (!pass) return std::move(pass).error();
  if (!s_.nvmlDeviceGetPersistenceMode || !s_.nvmlDeviceSetPersistenceMode)
    return make_error(ErrorCode::kFailedPrecondition, path_ + " has no nvmlDeviceSetPersistenceMode");
  auto dev = handle(uuid);
  if (!dev) return dev.error();
  nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
  nvmlReturn_t rc = s_.nvmlDeviceGetPersistenceMode(*dev, &mode);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetPersistenceMode", rc, uuid);
  if (mode == NVML_FEATURE_ENABLED) return {};
  rc = s_.nvmlDeviceSetPersistenceMode(*dev, NVML_FEATURE_ENABLED);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceSetPersistenceMode", rc, uuid);
  return {};
}

std::string NvmlGpuLibrary::describe() const {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  s_.nvmlSystemGetDriverVersion(version, sizeof version);
  return path_ + " (driver " + version + ")";
}

Result<SystemInfo> NvmlGpuLibrary::system_info() {
  SystemInfo info;
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  nvmlReturn_t rc = s_.nvmlSystemGetDriverVersion(version, sizeof version);
  if (rc != NVML_SUCCESS) return error("nvmlSystemGetDriverVersion", rc, "");
  info.driver_version = version;
  rc = s_.nvmlSystemGetCudaDriverVersion(&info.cuda_driver_version);
  if (rc != NVML_SUCCESS) return error("nvmlSystemGetCudaDriverVersion", rc, "");
  return info;
}

Result<unsigned> NvmlGpuLibrary::gpu_count() {
  unsigned count = 0;
  const nvmlReturn_t rc = s_.nvmlDeviceGetCount_v2(&count);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetCount_v2", rc, "");
  return count;
}

Result<GpuInfo> NvmlGpuLibrary::gpu(unsigned index) {
  auto pass = gate_.enter("GPU index " + std::to_string(index));
  if (!pass) return std::move(pass).error();
  GpuInfo g;
  g.index = index;
  nvmlDevice_t dev = nullptr;
  const std::string subject = "index " + std::to_string(index);
  nvmlReturn_t rc = s_.nvmlDeviceGetHandleByIndex_v2(index, &dev);
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetHandleByIndex_v2", rc, subject);
  char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if ((rc = s_.nvmlDeviceGetUUID(dev, text, sizeof text)) != NVML_SUCCESS) return error("nvmlDeviceGetUUID", rc, subject);
  g.uuid = text;
  if ((rc = s_.nvmlDeviceGetName(dev, text, sizeof text)) != NVML_SUCCESS) return error("nvmlDeviceGetName", rc, g.uuid);
  g.product_name = text;
  if ((rc = s_.nvmlDeviceGetMinorNumber(dev, &g.minor)) != NVML_SUCCESS)
    return error("nvmlDeviceGetMinorNumber", rc, g.uuid);
  nvmlBrandType_t brand{};
  if ((rc = s_.nvmlDeviceGetBrand(dev, &brand)) != NVML_SUCCESS) return error("nvmlDeviceGetBrand", rc, g.uuid);
  g.brand = brand_name(brand);
  nvmlDeviceArchitecture_t arch = 0;
  if ((rc = s_.nvmlDeviceGetArchitecture(dev, &arch)) != NVML_SUCCESS)
    return error("nvmlDeviceGetArchitecture", rc, g.uuid);
  g.architecture = architecture_name(arch);
  if ((rc = s_.nvmlDeviceGetCudaComputeCapability(dev, &g.cuda_cc_major, &g.cuda_cc_minor)) != NVML_SUCCESS)
    return error("nvmlDeviceGetCudaComputeCapability", rc, g.uuid);
  nvmlMemory_t mem{};
  rc = s_.nvmlDeviceGetMemoryInfo(dev, &mem);
  if (rc == NVML_SUCCESS) g.memory_bytes = mem.total;
  else if (rc != NVML_ERROR_NOT_SUPPORTED) return error("nvmlDeviceGetMemoryInfo", rc, g.uuid);
  nvmlPciInfo_t pci{};
  if ((rc = s_.nvmlDeviceGetPciInfo_v3(dev, &pci)) != NVML_SUCCESS) return error("nvmlDeviceGetPciInfo_v3", rc, g.uuid);
  g.pci = PciInfo{normalize_bus_id(pci.busId), pci.domain, pci.bus, pci.device, pci.pciDeviceId, pci.pciSubSystemId};
  if (s_.nvmlDeviceGetAddressingMode != nullptr) {
    nvmlDeviceAddressingMode_t mode{};
    mode.version = nvmlDeviceAddressingMode_v1;
    rc = s_.nvmlDeviceGetAddressingMode(dev, &mode);
    if (rc == NVML_SUCCESS) g.addressing_mode = addressing_mode_name(mode.value);
    else if (rc != NVML_ERROR_NOT_SUPPORTED) return error("nvmlDeviceGetAddressingMode", rc, g.uuid);
  }
  if (s_.nvmlDeviceGetModuleId != nullptr) {
    // Upstream's gpuModuleID (FabricManagerPartitioning): FM names GPUs by this id.
    unsigned module = 0;
    rc = s_.nvmlDeviceGetModuleId(dev, &module);
    if (rc == NVML_SUCCESS && module != 0) g.module_id = module;
    else if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) return error("nvmlDeviceGetModuleId", rc, g.uuid);
  }
  if (s_.nvmlDeviceGetVirtualizationMode != nullptr) {
    // A vGPU guest cannot create MIG devices (upstream: not dynamic-MIG capable).
    nvmlGpuVirtualizationMode_t mode{};
    rc = s_.nvmlDeviceGetVirtualizationMode(dev, &mode);
    if (rc == NVML_SUCCESS) g.virtualization_mode = static_cast<unsigned>(mode);
    else if (rc != NVML_ERROR_NOT_SUPPORTED) return error("nvmlDeviceGetVirtualizationMode", rc, g.uuid);
  }
  if (s_.nvmlDeviceGetMigMode != nullptr) {
    unsigned current = 0, pending = 0;
    rc = s_.nvmlDeviceGetMigMode(dev, &current, &pending);
    if (rc == NVML_SUCCESS) {
      g.mig_capable = true;
      g.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
      g.mig_pending_enabled = pending == NVML_DEVICE_MIG_ENABLE;
    } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
      return error("nvmlDeviceGetMigMode", rc, g.uuid);
    }
  }
  auto fab = fabric_of(dev, g.uuid);
  if (!fab) return fab.error();
  g.fabric = *fab;
  return g;
}

Result<std::optional<FabricInfo>> NvmlGpuLibrary::fabric(const std::string& gpu_uuid) {
  auto pass = gate_.enter("GPU " + gpu_uuid);
  if (!pass) return std::move(pass).error();
  auto dev = handle(gpu_uuid);
  if (!dev) return dev.error();
  return fabric_of(*dev, gpu_uuid);
}

// Upstream calls the v1 symbol and falls back to the versioned one (v2 struct) only when v1 is
// missing (nvml.md §1.2); so do we.
Result<std::optional<FabricInfo>> NvmlGpuLibrary::fabric_of(nvmlDevice_t dev, const std::string& uuid) {
  FabricInfo f;
  std::array<unsigned char, 16> cluster{};
  nvmlReturn_t rc;
  if (s_.nvmlDeviceGetGpuFabricInfo != nullptr) {
    nvmlGpuFabricInfo_t info{};
    rc = s_.nvmlDeviceGetGpuFabricInfo(dev, &info);
    if (rc == NVML_SUCCESS) {
      f.state = info.state, f.status = info.status, f.clique_id = info.cliqueId;
      std::copy(std::begin(info.clusterUuid), std::end(info.clusterUuid), cluster.begin());
    }
  } else if (s_.nvmlDeviceGetGpuFabricInfoV != nullptr) {
    nvmlGpuFabricInfo_v2_t info{};
    info.version = nvmlGpuFabricInfo_v2;
    rc = s_.nvmlDeviceGetGpuFabricInfoV(dev, reinterpret_cast<nvmlGpuFabricInfoV_t*>(&info));
    if (rc == NVML_SUCCESS) {
      f.state = info.state, f.status = info.status, f.clique_id = info.cliqueId;
      std::copy(std::begin(info.clusterUuid), std::end(info.clusterUuid), cluster.begin());
    }
  } else {
    return std::optional<FabricInfo>{};
  }
  if (rc == NVML_ERROR_NOT_SUPPORTED) return std::optional<FabricInfo>{};
  if (rc != NVML_SUCCESS) return error("nvmlDeviceGetGpuFabricInfo", rc, uuid);
  bool zero = true;
  for (unsigned char c : cluster) zero = zero && c == 0;
  if (!zero) f.cluster_uuid = uuid_string(cluster.data());
  return std::optional<FabricInfo>{f};
}

Result<std::unique_ptr<EventWatch>> NvmlGpuLibrary::watch_events(const std::vector<std::string>& uuids,
                                                                 uint64_t types) {
  auto pass = gate_.enter("the GPUs' events");
  if (!pass) return std::move(pass).error();
  return make_nvml_event_watch(*this, uuids, types);
}

Result<std::unique_ptr<GpuLibrary>> open_nvml(const LoadOptions& options) {
  const LibraryLocation where = locate_nvml_library(options.library_path, options.driver_root);
  void* dl = ::dlopen(where.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    std::string tried;
    for (const auto& p : where.searched) tried += (tried.empty() ? "" : ", ") + p;
    const char* why = ::dlerror();
    // No library file at all: the driver is not installed (yet); one that is there but will not load is broken.
    std::error_code ec;
    const bool absent = where.path.find('/') == std::string::npos || !std::filesystem::exists(where.path, ec);
    return make_error(absent ? ErrorCode::kUnavailable : ErrorCode::kFailedPrecondition,
                      "cannot load NVML (libnvidia-ml.so.1): " +
                                                          std::string(why ? why : "unknown dlopen error") +
                                                          "; searched: " + tried);
  }
  auto syms = resolve_nvml_symbols(dl, where.path);
  if (!syms) {
    ::dlclose(dl);
    return syms.error();
  }
  const nvmlReturn_t rc = syms->nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS);
  if (rc != NVML_SUCCESS) {
    std::string msg = "nvmlInitWithFlags (" + where.path + "): " + syms->nvmlErrorString(rc);
    if (syms->mock_last_error != nullptr && *syms->mock_last_error() != '\0') msg += ": " + std::string(syms->mock_last_error());
    ::dlclose(dl);
    // The kernel module not loaded (yet), or a library of another version than the module's (mid-upgrade),
    // is a state the driver's installation ends, not a misconfiguration.
    const bool changing = rc == NVML_ERROR_DRIVER_NOT_LOADED || rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    return make_error(changing ? ErrorCode::kUnavailable : ErrorCode::kFailedPrecondition, msg);
  }
  // Logged once per process: a missing optional symbol only disables the feature that needs it.
  for (const auto& name : syms->missing_optional)
    logger("nvml")->warn("{} does not export {}; the features that need it are off, ignoring", where.path, name);
  return std::unique_ptr<GpuLibrary>(new NvmlGpuLibrary(dl, where.path, std::move(syms).value()));
}

}  // namespace nvdra::nvml
