#pragma once
// The FabricManager API types nvdra uses, declared exactly as NVIDIA's nv_fm_types.h (Fabric Manager
// 525–580, libnvfm.so.1; fmConnectParams_v2 from 570) does: names, values, layouts. Only code under fm/ includes this; the rest
// of nvdra sees fm/fabric_manager.hpp. NVIDIA's header is not packaged for Debian, so the layouts
// are pinned by fm_layout_guards.hpp (sizes, offsets and version words worked out from that header).
#include <cstddef>

extern "C" {

typedef enum fmReturn_enum {
  FM_ST_SUCCESS = 0,
  FM_ST_BADPARAM = -1,
  FM_ST_GENERIC_ERROR = -2,
  FM_ST_NOT_SUPPORTED = -3,
  FM_ST_UNINITIALIZED = -4,
  FM_ST_TIMEOUT = -5,
  FM_ST_VERSION_MISMATCH = -6,
  FM_ST_IN_USE = -7,
  FM_ST_NOT_CONFIGURED = -8,
  FM_ST_CONNECTION_NOT_VALID = -9,
  FM_ST_NVLINK_ERROR = -10,
} fmReturn_t;

typedef void* fmHandle_t;

#define FM_MAX_STR_LENGTH 256
#define FM_UUID_BUFFER_SIZE 80
#define FM_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define MAKE_FM_PARAM_VERSION(typeName, ver) (unsigned int)(sizeof(typeName) | ((ver) << 24))
#define FM_CMD_PORT_NUMBER 6666

typedef struct {
  unsigned int version;
  char addressInfo[FM_MAX_STR_LENGTH];
  unsigned int timeoutMs;
  unsigned int addressIsUnixSocket;
} fmConnectParams_v1;

// Fabric Manager 570 and later (the header upstream's plugin is built with): addressType added.
enum nvFmApiAddrTypes {
  NV_FM_API_ADDR_TYPE_UNKNOWN = 0,
  NV_FM_API_ADDR_TYPE_INET = 1,
  NV_FM_API_ADDR_TYPE_UNIX = 2,
  NV_FM_API_ADDR_TYPE_VSOCK = 3,
};

typedef struct {
  unsigned int version;
  char addressInfo[FM_MAX_STR_LENGTH];
  unsigned int timeoutMs;
  unsigned int addressIsUnixSocket;  // deprecated in favour of addressType, still filled
  enum nvFmApiAddrTypes addressType;
} fmConnectParams_v2;
typedef fmConnectParams_v2 fmConnectParams_t;
#define fmConnectV1Params_version1 MAKE_FM_PARAM_VERSION(fmConnectParams_v1, 1)
#define fmConnectV2Params_version2 MAKE_FM_PARAM_VERSION(fmConnectParams_v2, 2)
#define fmConnectParams_version fmConnectV2Params_version2

#define FM_MAX_NUM_GPUS 16
#define FM_MAX_FABRIC_PARTITIONS 64
typedef unsigned int fmFabricPartitionId_t;

typedef struct {
  unsigned int physicalId;  // = the GPU's module id (nvmlDeviceGetModuleId) on HGX H100 and later
  char uuid[FM_UUID_BUFFER_SIZE];
  char pciBusId[FM_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
  unsigned int numNvLinksAvailable;
  unsigned int maxNumNvLinks;
  unsigned int nvlinkLineRateMBps;
} fmFabricPartitionGpuInfo_t;

typedef struct {
  fmFabricPartitionId_t partitionId;
  unsigned int isActive;
  unsigned int numGpus;
  fmFabricPartitionGpuInfo_t gpuInfo[FM_MAX_NUM_GPUS];
} fmFabricPartitionInfo_t;

typedef struct {
  unsigned int version;
  unsigned int numPartitions;
  unsigned int maxNumPartitions;
  fmFabricPartitionInfo_t partitionInfo[FM_MAX_FABRIC_PARTITIONS];
} fmFabricPartitionList_v2;
typedef fmFabricPartitionList_v2 fmFabricPartitionList_t;
// Sic: NVIDIA's header builds "version2" with version number 1.
#define fmFabricPartitionList_version2 MAKE_FM_PARAM_VERSION(fmFabricPartitionList_v2, 1)
#define fmFabricPartitionList_version fmFabricPartitionList_version2

fmReturn_t fmLibInit(void);
fmReturn_t fmLibShutdown(void);
fmReturn_t fmConnect(fmConnectParams_t* connectParams, fmHandle_t* pFmHandle);
fmReturn_t fmDisconnect(fmHandle_t pFmHandle);
fmReturn_t fmGetSupportedFabricPartitions(fmHandle_t pFmHandle, fmFabricPartitionList_t* pFmFabricPartition);
fmReturn_t fmActivateFabricPartition(fmHandle_t pFmHandle, fmFabricPartitionId_t partitionId);
fmReturn_t fmDeactivateFabricPartition(fmHandle_t pFmHandle, fmFabricPartitionId_t partitionId);

}  // extern "C"

#include "fm/fm_layout_guards.hpp"
