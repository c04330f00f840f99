#pragma once
// Compile-time checks of nvml_types.hpp against the sizes, offsets and version words of nvml.md §2.
// Included at the end of nvml_types.hpp; not meant to be included on its own.
#include <cstddef>

// Layout guards: the numbers of nvml.md §2.3, measured against NVIDIA's header (x86_64 / aarch64).
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlPciInfoExt_v1_t) == 64 && offsetof(nvmlPciInfoExt_v1_t, busId) == 32);
static_assert(sizeof(nvmlMemory_t) == 24 && sizeof(nvmlMemory_v2_t) == 40);
static_assert(offsetof(nvmlMemory_v2_t, total) == 8 && offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48 && offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152 && offsetof(nvmlGpuInstanceProfileInfo_v2_t, name) == 56);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v3_t) == 152 &&
              offsetof(nvmlGpuInstanceProfileInfo_v3_t, capabilities) == 144);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24 && sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(offsetof(nvmlGpuInstanceInfo_t, placement) == 16 && offsetof(nvmlComputeInstanceInfo_t, placement) == 24);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36 && sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 136 && sizeof(nvmlComputeInstanceProfileInfo_v3_t) == 140);
static_assert(sizeof(nvmlGpuFabricInfo_t) == 28 && offsetof(nvmlGpuFabricInfo_t, state) == 24);
static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36 && offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32);
static_assert(sizeof(nvmlGpuFabricInfo_v3_t) == 40 && offsetof(nvmlGpuFabricInfo_v3_t, healthSummary) == 36);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, gpuInstanceId) == 24);
static_assert(sizeof(nvmlProcessInfo_t) == 24 && sizeof(nvmlUUID_t) == 52);
static_assert(sizeof(nvmlDeviceAddressingMode_t) == 8 && sizeof(nvmlPlatformInfo_v2_t) == 44);
static_assert(nvmlMemory_v2 == 0x02000028 && nvmlGpuInstanceProfileInfo_v2 == 0x02000098);
static_assert(nvmlGpuInstanceProfileInfo_v3 == 0x03000098 && nvmlComputeInstanceProfileInfo_v2 == 0x02000088);
static_assert(nvmlComputeInstanceProfileInfo_v3 == 0x0300008C && nvmlGpuFabricInfo_v2 == 0x02000024);
static_assert(nvmlGpuFabricInfo_v3 == 0x03000028 && nvmlDeviceAddressingMode_v1 == 0x01000008);
static_assert(nvmlUUID_v1 == 0x01000034 && nvmlPciInfoExt_v1 == 0x01000040 && nvmlPlatformInfo_v2 == 0x0200002C);
static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, valueType) == 24 &&
              offsetof(nvmlFieldValue_t, value) == 32);
