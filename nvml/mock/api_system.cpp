// Exported NVML: lifetime, system facts, device handles.
#include <cstdio>
#include <cstring>
#include <string>
#include <filesystem>
#include <system_error>
#include <vector>

#include "nvml/mock/api_support.hpp"
#include "nvml/nvml_functions.hpp"

using namespace nvdra::nvml::mock;

namespace {

// Accepts "%x:%x:%x.%x", "%x:%x:%x" and "%x:%x.%x" (domain:bus:device.function), as NVML does.
bool parse_bus_id(const char* text, unsigned* domain, unsigned* bus, unsigned* device) {
  unsigned d = 0, b = 0, dev = 0, f = 0;
  char tail = 0;
  if (std::sscanf(text, "%x:%x:%x.%x%c", &d, &b, &dev, &f, &tail) == 4 ||
      std::sscanf(text, "%x:%x:%x%c", &d, &b, &dev, &tail) == 3) {
    *domain = d, *bus = b, *device = dev;
    return true;
  }
  if (std::sscanf(text, "%x:%x.%x%c", &b, &dev, &f, &tail) == 3) {
    *domain = 0, *bus = b, *device = dev;
    return true;
  }
  return false;
}

// A GPU the simulated host has bound to another driver (vfio-pci) or to none is invisible to NVML,
// as on a real host: <NVDRA_MOCK_HOST_ROOT>/sys/bus/pci/devices/<bdf>/driver says which. A GPU
// without a PCI function there (no `vendor` file: profiles without a PCI tree) stays visible.
bool hidden_from_nvml(const Session& s, const GpuSpec& g) {
  if (s.caps_root.empty()) return false;
  char bdf[32];
  std::snprintf(bdf, sizeof bdf, "%04x:%02x:%02x.%x", g.domain, g.bus, g.device, g.function);
  const std::filesystem::path dev = std::filesystem::path(s.caps_root) / "sys/bus/pci/devices" / bdf;
  std::error_code ec;
  if (!std::filesystem::exists(dev / "vendor", ec)) return false;
  const auto driver = std::filesystem::read_symlink(dev / "driver", ec);
  return ec || driver.filename() != "nvidia";
}

std::vector<unsigned> visible_gpus(const Session& s) {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < s.profile.gpus.size(); ++i)
    if (!hidden_from_nvml(s, s.profile.gpus[i])) out.push_back(i);
  return out;
}

nvmlReturn_t handle_by_uuid(const std::string& uuid, nvmlDevice_t* device) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < s->profile.gpus.size(); ++i) {
    if (s->profile.gpus[i].uuid == uuid) {
      if (hidden_from_nvml(*s, s->profile.gpus[i])) return NVML_ERROR_NOT_FOUND;
      *device = make_handle<nvmlDevice_t>(Ref{Kind::kGpu, i});
      attach_gpu(*s, i);
      return NVML_SUCCESS;
    }
  }
  if (uuid.rfind("MIG-", 0) != 0) return NVML_ERROR_NOT_FOUND;
  return static_cast<nvmlReturn_t>(s->state->with(Access::kRead, [&](MachineState& m) -> int {
    for (unsigned i = 0; i < s->profile.gpus.size(); ++i) {
      for (const auto& ci : m.gpus[i].cis) {
        const std::string legacy = "MIG-" + s->profile.gpus[i].uuid + "/" + std::to_string(ci.gi_id) + "/" +
                                   std::to_string(ci.id);
        if (mig_uuid(s->profile.gpus[i].uuid, ci.gi_id, ci.id) == uuid || legacy == uuid) {
          *device = make_handle<nvmlDevice_t>(Ref{Kind::kMig, i, ci.gi_id, ci.id});
          return NVML_SUCCESS;
        }
      }
    }
    return NVML_ERROR_NOT_FOUND;
  }));
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) { return session_init(); }
nvmlReturn_t nvmlInit(void) { return session_init(); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  if ((flags & ~(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH)) != 0) return NVML_ERROR_INVALID_ARGUMENT;
  return session_init();
}
nvmlReturn_t nvmlShutdown(void) { return session_shutdown(); }

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  // The module unloaded, or another version loaded, under a running session (a driver upgrade).
  if (!driver_loaded()) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (driver_version_now(s->profile) != s->driver_version) return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
  return copy_out(version, length, s->driver_version);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  const int major = s->profile.cuda_driver_version / 1000;
  return copy_out(version, length, std::to_string(major) + "." + s->driver_version);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (v == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *v = s->profile.cuda_driver_version;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) { return nvmlSystemGetCudaDriverVersion(v); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(visible_gpus(*s).size());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  const auto visible = visible_gpus(*s);
  if (device == nullptr || index >= visible.size()) return NVML_ERROR_INVALID_ARGUMENT;
  const nvmlDevice_t h = make_handle<nvmlDevice_t>(Ref{Kind::kGpu, visible[index]});
  return with_gpu(h, Access::kRead, [&](DeviceView&) {
    *device = h;
    attach_gpu(*s, visible[index]);
    return NVML_SUCCESS;
  });
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (uuid == nullptr) return current_session() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  return handle_by_uuid(uuid, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUIDV(const nvmlUUID_t* uuid, nvmlDevice_t* device) {
  if (!current_session()) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (uuid->version != nvmlUUID_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (uuid->type == NVML_UUID_TYPE_ASCII) {
    return handle_by_uuid(std::string(uuid->value.str, strnlen(uuid->value.str, sizeof uuid->value.str)), device);
  }
  if (uuid->type != NVML_UUID_TYPE_BINARY) return NVML_ERROR_INVALID_ARGUMENT;
  char text[48];
  const unsigned char* b = uuid->value.bytes;
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return handle_by_uuid(text, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  auto s = current_session();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  unsigned domain = 0, bus = 0, dev = 0;
  if (bus_id == nullptr || device == nullptr || !parse_bus_id(bus_id, &domain, &bus, &dev))
    return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < s->profile.gpus.size(); ++i) {
    const auto& g = s->profile.gpus[i];
    if (g.domain == domain && g.bus == bus && g.device == dev) {
      if (hidden_from_nvml(*s, g)) return NVML_ERROR_NOT_FOUND;
      *device = make_handle<nvmlDevice_t>(Ref{Kind::kGpu, i});
      attach_gpu(*s, i);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

}  // extern "C"
