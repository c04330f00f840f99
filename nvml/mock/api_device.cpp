// Exported NVML: per-device facts of full GPUs and MIG devices.
#include <cstdio>
#include <cstring>
#include <string>

#include "nvml/mock/api_support.hpp"
#include "nvml/nvml_functions.hpp"

using namespace nvdra::nvml::mock;

namespace {

// nvmlDeviceGetPciInfo (v1) wrote this older, shorter layout; old binaries pass a buffer this big.
struct PciInfoV1 {
  char busId[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  unsigned int reserved[4];
};

nvmlReturn_t fill_pci(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (pci == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    std::memset(pci, 0, sizeof *pci);
    pci->domain = v.spec.domain;
    pci->bus = v.spec.bus;
    pci->device = v.spec.device;
    pci->pciDeviceId = v.spec.product->pci_device_id;
    pci->pciSubSystemId = v.spec.product->pci_subsystem_id;
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", v.spec.domain & 0xFFFF, v.spec.bus,
                  v.spec.device, v.spec.function);
    std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", v.spec.domain, v.spec.bus, v.spec.device,
                  v.spec.function);
    return NVML_SUCCESS;
  });
}

unsigned long long total_bytes(const DeviceView& v) {
  if (v.is_mig()) return v.gi_profile->memory_mib << 20;
  return v.spec.product->memory_mib << 20;
}

unsigned long long reserved_bytes(const DeviceView& v) { return v.is_mig() ? 0 : v.spec.product->reserved_mib << 20; }

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    const std::string text = v.is_mig() ? v.spec.product->name + " MIG " + mig_profile_of(v) : v.spec.product->name;
    return copy_out(name, length, text);
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    return copy_out(uuid, length, v.is_mig() ? mig_uuid(v.spec.uuid, v.ci->gi_id, v.ci->id) : v.spec.uuid);
  });
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return with_device(device, Access::kRead, [&](DeviceView& v) { return copy_out(serial, length, v.spec.serial); });
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (v.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *minor = v.spec.minor;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!v.is_mig()) {
      *index = v.index();
      return NVML_SUCCESS;
    }
    const auto order = mig_devices_in_order(v.st);
    for (unsigned i = 0; i < order.size(); ++i) {
      if (order[i].gi_id == v.ci->gi_id && order[i].id == v.ci->id) {
        *index = i;
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) { return fill_pci(device, pci); }
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) { return fill_pci(device, pci); }
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (pci == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  nvmlPciInfo_t full;
  const nvmlReturn_t rc = fill_pci(device, &full);
  if (rc != NVML_SUCCESS) return rc;
  PciInfoV1 old{};
  std::memcpy(old.busId, full.busIdLegacy, sizeof old.busId);
  old.domain = full.domain, old.bus = full.bus, old.device = full.device;
  old.pciDeviceId = full.pciDeviceId, old.pciSubSystemId = full.pciSubSystemId;
  std::memcpy(static_cast<void*>(pci), &old, sizeof old);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t device, nvmlPciInfoExt_t* pci) {
  if (pci == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  if (pci->version != nvmlPciInfoExt_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  nvmlPciInfo_t full;
  const nvmlReturn_t rc = fill_pci(device, &full);
  if (rc != NVML_SUCCESS) return rc;
  pci->domain = full.domain, pci->bus = full.bus, pci->device = full.device;
  pci->pciDeviceId = full.pciDeviceId, pci->pciSubSystemId = full.pciSubSystemId;
  pci->baseClass = 3, pci->subClass = 2;  // "3D controller"
  std::memcpy(pci->busId, full.busId, sizeof pci->busId);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *type = static_cast<nvmlBrandType_t>(v.spec.product->brand);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (arch == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = v.spec.product->architecture;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *major = v.spec.product->cc_major;
    *minor = v.spec.product->cc_minor;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = total_bytes(v);
    memory->used = reserved_bytes(v);  // v1 "used" includes the driver-reserved part
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory->total = total_bytes(v);
    memory->reserved = reserved_bytes(v);
    memory->used = 0;
    memory->free = memory->total - memory->reserved;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetAddressingMode(nvmlDevice_t device, nvmlDeviceAddressingMode_t* mode) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mode->version != nvmlDeviceAddressingMode_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    mode->value = v.spec.product->addressing_mode;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device, nvmlGpuVirtualizationMode_t* mode) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = static_cast<nvmlGpuVirtualizationMode_t>(v.spec.virtualization_mode);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = v.st.persistence ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t mode) {
  return with_gpu(device, Access::kWrite, [&](DeviceView& v) {
    if (mode != NVML_FEATURE_ENABLED && mode != NVML_FEATURE_DISABLED) return NVML_ERROR_INVALID_ARGUMENT;
    v.st.persistence = mode == NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return with_device(device, Access::kRead, [&](DeviceView&) {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = NVML_COMPUTEMODE_DEFAULT;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return with_device(device, Access::kRead, [&](DeviceView& v) {
    if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!v.spec.numa_node) return NVML_ERROR_NOT_SUPPORTED;
    *node = *v.spec.numa_node;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetModuleId(nvmlDevice_t device, unsigned int* module_id) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (module_id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!v.spec.module_id) return NVML_ERROR_NOT_SUPPORTED;
    *module_id = *v.spec.module_id;
    return NVML_SUCCESS;
  });
}

// Platform (tray/slot) facts are not modelled by any profile yet.
nvmlReturn_t nvmlDeviceGetPlatformInfo(nvmlDevice_t device, nvmlPlatformInfo_t* info) {
  return with_gpu(device, Access::kRead, [&](DeviceView&) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return info->version == nvmlPlatformInfo_v2 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  });
}

// No process ever runs on a mock GPU.
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t*) {
  return with_device(device, Access::kRead, [&](DeviceView&) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
  });
}

namespace {
// The profile's fabric state unless a test changed it (nvdraMockSetFabricState: registration finishing).
unsigned fabric_state(const DeviceView& v) {
  return v.st.fabric_state >= 0 ? static_cast<unsigned>(v.st.fabric_state) : v.spec.fabric->state;
}

// The profile's clique id unless a test changed it (nvdraMockSetFabricClique: registered in another clique).
unsigned fabric_clique(const DeviceView& v) {
  return v.st.fabric_clique >= 0 ? static_cast<unsigned>(v.st.fabric_clique) : v.spec.fabric->clique_id;
}
}  // namespace

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* info) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!v.spec.fabric) return NVML_ERROR_NOT_SUPPORTED;
    std::memset(info, 0, sizeof *info);
    std::memcpy(info->clusterUuid, v.spec.fabric->cluster_uuid.data(), NVML_GPU_FABRIC_UUID_LEN);
    info->status = static_cast<nvmlReturn_t>(v.spec.fabric->status);
    info->cliqueId = fabric_clique(v);
    info->state = static_cast<nvmlGpuFabricState_t>(fabric_state(v));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t* info) {
  return with_gpu(device, Access::kRead, [&](DeviceView& v) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned version = info->version;
    if (version != nvmlGpuFabricInfo_v2 && version != nvmlGpuFabricInfo_v3) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!v.spec.fabric) return NVML_ERROR_NOT_SUPPORTED;
    // A v2 caller allocated 36 bytes: fill through the v2 layout and touch healthSummary only for v3.
    auto* v2 = reinterpret_cast<nvmlGpuFabricInfo_v2_t*>(info);
    std::memset(v2, 0, sizeof *v2);
    v2->version = version;
    std::memcpy(v2->clusterUuid, v.spec.fabric->cluster_uuid.data(), NVML_GPU_FABRIC_UUID_LEN);
    v2->status = static_cast<nvmlReturn_t>(v.spec.fabric->status);
    v2->cliqueId = fabric_clique(v);
    v2->state = static_cast<nvmlGpuFabricState_t>(fabric_state(v));
    v2->healthMask = v.spec.fabric->health_mask;
    if (version == nvmlGpuFabricInfo_v3) info->healthSummary = static_cast<unsigned char>(v.spec.fabric->health_summary);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
