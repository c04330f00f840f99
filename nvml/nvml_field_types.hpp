#pragma once
// NVML's field-value types (nvmlDeviceGetFieldValues) and the GPU recovery action, declared exactly as
// nvml.h does; part of nvml_types.hpp, which includes this (device health reads the recovery action).
#include "nvml/nvml_types.hpp"  // nvmlReturn_t (that header includes this one at its end)

extern "C" {

// nvmlDeviceGetFieldValues (nvml.h): one field per entry, NVML fills in the value and its type.
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;
typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
// nvmlDeviceGpuRecoveryAction_t: what the driver says must happen for the GPU to recover.
#define NVML_GPU_RECOVERY_ACTION_NONE 0
#define NVML_GPU_RECOVERY_ACTION_GPU_RESET 1
#define NVML_GPU_RECOVERY_ACTION_NODE_REBOOT 2
#define NVML_GPU_RECOVERY_ACTION_DRAIN_P2P 3
#define NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET 4

}  // extern "C"
