#pragma once
// Compile-time checks of fm_types.hpp against NVIDIA's nv_fm_types.h (x86_64 / aarch64: unsigned
// int 4 bytes, no padding in these structs). Included at the end of fm_types.hpp only.
#include <cstddef>

static_assert(sizeof(fmReturn_t) == 4 && FM_ST_NVLINK_ERROR == -10 && FM_ST_IN_USE == -7);
// fmConnectParams_v1: version, addressInfo[256], timeoutMs, addressIsUnixSocket.
static_assert(sizeof(fmConnectParams_v1) == 268 && offsetof(fmConnectParams_v1, addressInfo) == 4);
static_assert(offsetof(fmConnectParams_v1, timeoutMs) == 260 && offsetof(fmConnectParams_v1, addressIsUnixSocket) == 264);
static_assert(fmConnectV1Params_version1 == 0x0100010Cu);
// fmConnectParams_v2 (FM 570+): v1 plus addressType; the word upstream's plugin sends, 0x02000110.
static_assert(sizeof(fmConnectParams_v2) == 272 && offsetof(fmConnectParams_v2, addressType) == 268);
static_assert(sizeof(enum nvFmApiAddrTypes) == 4 && fmConnectParams_version == 0x02000110u);
// fmFabricPartitionGpuInfo_t: physicalId, uuid[80], pciBusId[32], three link counters.
static_assert(sizeof(fmFabricPartitionGpuInfo_t) == 128 && offsetof(fmFabricPartitionGpuInfo_t, uuid) == 4);
static_assert(offsetof(fmFabricPartitionGpuInfo_t, pciBusId) == 84 &&
              offsetof(fmFabricPartitionGpuInfo_t, numNvLinksAvailable) == 116 &&
              offsetof(fmFabricPartitionGpuInfo_t, nvlinkLineRateMBps) == 124);
// fmFabricPartitionInfo_t: id, isActive, numGpus, gpuInfo[16].
static_assert(sizeof(fmFabricPartitionInfo_t) == 12 + 16 * 128 && offsetof(fmFabricPartitionInfo_t, gpuInfo) == 12);
// fmFabricPartitionList_v2: version, numPartitions, maxNumPartitions, partitionInfo[64].
static_assert(sizeof(fmFabricPartitionList_v2) == 131852 && offsetof(fmFabricPartitionList_v2, partitionInfo) == 12);
static_assert(fmFabricPartitionList_version == 0x0102030Cu);
