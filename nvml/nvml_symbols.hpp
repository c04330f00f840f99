#pragma once
// The NVML entry points nvdra calls, resolved once with dlsym by their versioned names (nvml.md
// §1.1: C code calling the plain name binds the versioned symbol through a #define; dlsym must ask
// for that name explicitly). Required ones fail the load; a missing optional one disables the
// feature that needs it (logged once by the caller).
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "nvml/nvml_functions.hpp"

namespace nvdra::nvml {

#define NVDRA_NVML_REQUIRED_SYMBOLS(X)                                                                       \
  X(nvmlInitWithFlags) X(nvmlShutdown) X(nvmlErrorString) X(nvmlSystemGetDriverVersion)                     \
  X(nvmlSystemGetCudaDriverVersion) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex_v2)               \
  X(nvmlDeviceGetHandleByUUID) X(nvmlDeviceGetName) X(nvmlDeviceGetUUID) X(nvmlDeviceGetMinorNumber)        \
  X(nvmlDeviceGetPciInfo_v3) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetBrand) X(nvmlDeviceGetArchitecture)  \
  X(nvmlDeviceGetCudaComputeCapability)

#define NVDRA_NVML_OPTIONAL_SYMBOLS(X)                                                                       \
  X(nvmlDeviceGetMigMode) X(nvmlDeviceSetMigMode) X(nvmlDeviceGetGpuInstanceProfileInfo)                    \
  X(nvmlDeviceGetGpuInstancePossiblePlacements_v2) X(nvmlDeviceCreateGpuInstanceWithPlacement)              \
  X(nvmlGpuInstanceDestroy) X(nvmlDeviceGetGpuInstanceById) X(nvmlGpuInstanceGetInfo)                       \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo) X(nvmlGpuInstanceCreateComputeInstance)                  \
  X(nvmlComputeInstanceDestroy) X(nvmlGpuInstanceGetComputeInstanceById) X(nvmlComputeInstanceGetInfo_v2)  \
  X(nvmlDeviceGetMaxMigDeviceCount) X(nvmlDeviceGetMigDeviceHandleByIndex) X(nvmlDeviceGetGpuInstanceId)   \
  X(nvmlDeviceGetComputeInstanceId) X(nvmlDeviceGetAddressingMode) X(nvmlDeviceGetGpuFabricInfo)           \
  X(nvmlDeviceGetGpuFabricInfoV) X(nvmlEventSetCreate) X(nvmlDeviceGetSupportedEventTypes)                  \
  X(nvmlDeviceRegisterEvents) X(nvmlEventSetWait_v2) X(nvmlEventSetFree) X(nvmlDeviceGetVirtualizationMode)  \
  X(nvmlDeviceGetGpuInstances) X(nvmlGpuInstanceGetComputeInstances) X(nvmlDeviceGetModuleId)  \
  X(nvmlDeviceGetFieldValues) X(nvmlDeviceGetPersistenceMode) X(nvmlDeviceSetPersistenceMode)

struct NvmlSymbols {
#define NVDRA_NVML_DECLARE(name) decltype(&::name) name = nullptr;
  NVDRA_NVML_REQUIRED_SYMBOLS(NVDRA_NVML_DECLARE)
  NVDRA_NVML_OPTIONAL_SYMBOLS(NVDRA_NVML_DECLARE)
#undef NVDRA_NVML_DECLARE
  std::vector<std::string> missing_optional;
  // The mock's diagnostic hook (nvml/mock/test_hooks.h), absent from NVIDIA's library.
  const char* (*mock_last_error)() = nullptr;
};

// Resolves every symbol from a dlopen handle; fails naming the first missing required symbol.
Result<NvmlSymbols> resolve_nvml_symbols(void* handle, const std::string& path);

}  // namespace nvdra::nvml
