// ABI probe: built against NVIDIA's own nvml.h (Debian's libnvidia-ml-dev), never nvdra's
// declarations. It dlopens a libnvidia-ml.so.1, reads everything `nvdra-agent devices` reports
// through every NVML function the agent calls, exercises the MIG and event calls, and prints JSON
// for test/nvml/abi_check_test.py to compare. Functions newer than that header (addressing mode,
// fabric info) use local structs checked against nvml.md §2.3 with static_asserts.
#include <dlfcn.h>
#include <nvml.h>

#include <boost/json.hpp>
#include <cstddef>
#include <cstdio>
#include <string>

namespace json = boost::json;

namespace {

struct AddressingMode {  // nvmlDeviceAddressingMode_v1_t (CUDA 12.9+)
  unsigned int version;
  unsigned int value;
};
static_assert(sizeof(AddressingMode) == 8);
struct FabricInfoV1 {  // nvmlGpuFabricInfo_t (CUDA 12.0+)
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
};
static_assert(sizeof(FabricInfoV1) == 28 && offsetof(FabricInfoV1, state) == 24 && offsetof(FabricInfoV1, cliqueId) == 20);
// The header's own layouts must match what nvml.md §2.3 (and nvdra's nvml_types.hpp) say.
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48 && offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24 && sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36 && sizeof(nvmlEventData_t) == 32);
static_assert(sizeof(nvmlMemory_t) == 24 && offsetof(nvmlEventData_t, gpuInstanceId) == 24);

void* lib = nullptr;
template <class F>
F sym(const char* name) {
  void* p = ::dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "probe: missing symbol %s\n", name);
    std::exit(3);
  }
  return reinterpret_cast<F>(p);
}
#define NV(name) sym<decltype(&::name)>(#name)

void check(nvmlReturn_t rc, const char* call) {
  if (rc != NVML_SUCCESS) {
    std::fprintf(stderr, "probe: %s: %s\n", call, NV(nvmlErrorString)(rc));
    std::exit(4);
  }
}

json::object mig_part(nvmlDevice_t dev, json::object& g) {
  json::array profiles, devices;
  // The 11.8 header's NVML_GPU_INSTANCE_PROFILE_COUNT predates 1_SLICE_REV2 (index 9); upstream and
  // nvdra iterate up to the API 13 count, 0x11 (nvml.md §0).
  static_assert(NVML_GPU_INSTANCE_PROFILE_COUNT <= 0x11);
  for (unsigned idx = 0; idx < 0x11; ++idx) {
    nvmlGpuInstanceProfileInfo_t info{};
    const nvmlReturn_t rc = NV(nvmlDeviceGetGpuInstanceProfileInfo)(dev, idx, &info);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    check(rc, "nvmlDeviceGetGpuInstanceProfileInfo");
    unsigned count = 0;
    check(NV(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(dev, info.id, nullptr, &count), "placements");
    std::vector<nvmlGpuInstancePlacement_t> pl(count);
    check(NV(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(dev, info.id, pl.data(), &count), "placements");
    json::array placements;
    for (const auto& p : pl) placements.push_back(json::object{{"start", p.start}, {"size", p.size}});
    profiles.push_back(json::object{{"profileIndex", idx}, {"profileId", info.id}, {"sliceCount", info.sliceCount},
                                    {"instanceCount", info.instanceCount}, {"memoryMiB", info.memorySizeMB},
                                    {"multiprocessors", info.multiprocessorCount}, {"copyEngines", info.copyEngineCount},
                                    {"decoders", info.decoderCount}, {"encoders", info.encoderCount},
                                    {"jpegEngines", info.jpegCount}, {"ofaEngines", info.ofaCount},
                                    {"placements", std::move(placements)}});
  }
  unsigned max = 0;
  check(NV(nvmlDeviceGetMaxMigDeviceCount)(dev, &max), "nvmlDeviceGetMaxMigDeviceCount");
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig{};
    const nvmlReturn_t rc = NV(nvmlDeviceGetMigDeviceHandleByIndex)(dev, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    check(rc, "nvmlDeviceGetMigDeviceHandleByIndex");
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    check(NV(nvmlDeviceGetUUID)(mig, uuid, sizeof uuid), "nvmlDeviceGetUUID(mig)");
    unsigned gi_id = 0, ci_id = 0;
    check(NV(nvmlDeviceGetGpuInstanceId)(mig, &gi_id), "nvmlDeviceGetGpuInstanceId");
    check(NV(nvmlDeviceGetComputeInstanceId)(mig, &ci_id), "nvmlDeviceGetComputeInstanceId");
    nvmlGpuInstance_t gi{};
    check(NV(nvmlDeviceGetGpuInstanceById)(dev, gi_id, &gi), "nvmlDeviceGetGpuInstanceById");
    nvmlGpuInstanceInfo_t gi_info{};
    check(NV(nvmlGpuInstanceGetInfo)(gi, &gi_info), "nvmlGpuInstanceGetInfo");
    nvmlComputeInstance_t ci{};
    check(NV(nvmlGpuInstanceGetComputeInstanceById)(gi, ci_id, &ci), "nvmlGpuInstanceGetComputeInstanceById");
    nvmlComputeInstanceInfo_t ci_info{};
    check(NV(nvmlComputeInstanceGetInfo_v2)(ci, &ci_info), "nvmlComputeInstanceGetInfo_v2");
    devices.push_back(json::object{{"uuid", uuid}, {"giId", gi_id}, {"ciId", ci_id}, {"profileId", gi_info.profileId},
                                   {"ciProfileId", ci_info.profileId},
                                   {"placement", json::object{{"start", gi_info.placement.start},
                                                              {"size", gi_info.placement.size}}}});
  }
  g["migProfiles"] = std::move(profiles);
  g["migDevices"] = std::move(devices);
  return g;
}

// Create and destroy one MIG device and wait for events through the calls the agent makes; any
// unexpected return code exits non-zero.
json::object exercise(nvmlDevice_t dev) {
  nvmlReturn_t activation{};
  check(NV(nvmlDeviceSetMigMode)(dev, NVML_DEVICE_MIG_ENABLE, &activation), "nvmlDeviceSetMigMode");
  nvmlGpuInstancePlacement_t placement{0, 1};
  nvmlGpuInstance_t gi{};
  check(NV(nvmlDeviceCreateGpuInstanceWithPlacement)(dev, 19, &placement, &gi), "create GI");
  const nvmlReturn_t occupied = NV(nvmlDeviceCreateGpuInstanceWithPlacement)(dev, 19, &placement, &gi);
  nvmlComputeInstanceProfileInfo_t ci_prof{};
  check(NV(nvmlGpuInstanceGetComputeInstanceProfileInfo)(gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                          NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci_prof),
        "CI profile");
  nvmlComputeInstance_t ci{};
  check(NV(nvmlGpuInstanceCreateComputeInstance)(gi, ci_prof.id, &ci), "create CI");
  nvmlComputeInstanceInfo_t info{};
  check(NV(nvmlComputeInstanceGetInfo_v2)(ci, &info), "CI info");
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  check(NV(nvmlDeviceGetUUID)(info.device, uuid, sizeof uuid), "MIG UUID");
  check(NV(nvmlComputeInstanceDestroy)(ci), "destroy CI");
  check(NV(nvmlGpuInstanceDestroy)(gi), "destroy GI");
  check(NV(nvmlDeviceSetMigMode)(dev, NVML_DEVICE_MIG_DISABLE, &activation), "disable MIG");
  nvmlEventSet_t set{};
  check(NV(nvmlEventSetCreate)(&set), "nvmlEventSetCreate");
  unsigned long long supported = 0;
  check(NV(nvmlDeviceGetSupportedEventTypes)(dev, &supported), "nvmlDeviceGetSupportedEventTypes");
  check(NV(nvmlDeviceRegisterEvents)(dev, supported & nvmlEventTypeXidCriticalError, set), "nvmlDeviceRegisterEvents");
  nvmlEventData_t data{};
  const nvmlReturn_t waited = NV(nvmlEventSetWait_v2)(set, &data, 0);
  check(NV(nvmlEventSetFree)(set), "nvmlEventSetFree");
  return json::object{{"occupiedPlacement", NV(nvmlErrorString)(occupied)},
                      {"ciProfileSlices", ci_prof.sliceCount},
                      {"migUuidPrefix", std::string(uuid).substr(0, 4)},
                      {"supportedEvents", supported},
                      {"idleWait", NV(nvmlErrorString)(waited)}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: nvml_abi_probe <libnvidia-ml.so.1> [--exercise]\n");
    return 2;
  }
  lib = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::fprintf(stderr, "probe: %s\n", ::dlerror()), 3;
  check(NV(nvmlInitWithFlags)(1), "nvmlInitWithFlags");
  char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  check(NV(nvmlSystemGetDriverVersion)(text, sizeof text), "nvmlSystemGetDriverVersion");
  json::object out{{"driverVersion", text}};
  int cuda = 0;
  check(NV(nvmlSystemGetCudaDriverVersion)(&cuda), "nvmlSystemGetCudaDriverVersion");
  out["cudaDriverVersion"] = cuda;
  unsigned count = 0;
  check(NV(nvmlDeviceGetCount_v2)(&count), "nvmlDeviceGetCount_v2");
  json::array gpus;
  nvmlDevice_t first{};
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev{};
    check(NV(nvmlDeviceGetHandleByIndex_v2)(i, &dev), "nvmlDeviceGetHandleByIndex_v2");
    if (i == 0) first = dev;
    json::object g{{"index", i}};
    check(NV(nvmlDeviceGetUUID)(dev, text, sizeof text), "nvmlDeviceGetUUID");
    g["uuid"] = text;
    nvmlDevice_t again{};
    check(NV(nvmlDeviceGetHandleByUUID)(text, &again), "nvmlDeviceGetHandleByUUID");
    if (again != dev) return std::fprintf(stderr, "probe: handle by UUID differs from handle by index\n"), 5;
    check(NV(nvmlDeviceGetName)(dev, text, sizeof text), "nvmlDeviceGetName");
    g["productName"] = text;
    unsigned minor = 0;
    check(NV(nvmlDeviceGetMinorNumber)(dev, &minor), "nvmlDeviceGetMinorNumber");
    g["minor"] = minor;
    nvmlBrandType_t brand{};
    check(NV(nvmlDeviceGetBrand)(dev, &brand), "nvmlDeviceGetBrand");
    g["brand"] = static_cast<int>(brand);
    nvmlDeviceArchitecture_t arch{};
    check(NV(nvmlDeviceGetArchitecture)(dev, &arch), "nvmlDeviceGetArchitecture");
    g["architecture"] = arch;
    int major = 0, minor_cc = 0;
    check(NV(nvmlDeviceGetCudaComputeCapability)(dev, &major, &minor_cc), "nvmlDeviceGetCudaComputeCapability");
    g["cudaComputeCapability"] = std::to_string(major) + "." + std::to_string(minor_cc);
    nvmlMemory_t mem{};
    check(NV(nvmlDeviceGetMemoryInfo)(dev, &mem), "nvmlDeviceGetMemoryInfo");
    g["memoryBytes"] = mem.total;
    nvmlPciInfo_t pci{};
    check(NV(nvmlDeviceGetPciInfo_v3)(dev, &pci), "nvmlDeviceGetPciInfo_v3");
    g["pciBusId"] = pci.busId;
    g["pciDeviceId"] = pci.pciDeviceId;
    g["pciSubsystemId"] = pci.pciSubSystemId;
    AddressingMode mode{0x01000008, 0};
    auto get_mode = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, AddressingMode*)>(::dlsym(lib, "nvmlDeviceGetAddressingMode"));
    if (get_mode != nullptr && get_mode(dev, &mode) == NVML_SUCCESS) g["addressingMode"] = mode.value;
    FabricInfoV1 fabric{};
    auto get_fabric = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, FabricInfoV1*)>(::dlsym(lib, "nvmlDeviceGetGpuFabricInfo"));
    if (get_fabric != nullptr && get_fabric(dev, &fabric) == NVML_SUCCESS) {
      json::array cluster;
      for (unsigned char b : fabric.clusterUuid) cluster.push_back(b);
      g["fabric"] = json::object{{"state", fabric.state}, {"status", static_cast<int>(fabric.status)},
                                 {"cliqueId", fabric.cliqueId}, {"clusterUuidBytes", std::move(cluster)}};
    }
    unsigned current = 0, pending = 0;
    const nvmlReturn_t mig = NV(nvmlDeviceGetMigMode)(dev, &current, &pending);
    g["migCapable"] = mig == NVML_SUCCESS;
    g["migEnabled"] = mig == NVML_SUCCESS && current == NVML_DEVICE_MIG_ENABLE;
    if (mig == NVML_SUCCESS) mig_part(dev, g);
    gpus.push_back(std::move(g));
  }
  out["gpus"] = std::move(gpus);
  if (argc > 2 && std::string(argv[2]) == "--exercise" && count > 0) out["exercise"] = exercise(first);
  check(NV(nvmlShutdown)(), "nvmlShutdown");
  std::printf("%s\n", json::serialize(out).c_str());
  return 0;
}
