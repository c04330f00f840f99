// The dlopen binding of libnvfm.so.1 behind the FabricManager seam.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "fm/fabric_manager.hpp"
#include "fm/fm_types.hpp"
#include "fm/library_locator.hpp"

namespace nvdra::fm {
namespace {

ErrorCode code_of(fmReturn_t rc) {
  switch (rc) {
    case FM_ST_BADPARAM: return ErrorCode::kInvalidArgument;
    case FM_ST_NOT_SUPPORTED:
    case FM_ST_NOT_CONFIGURED: return ErrorCode::kFailedPrecondition;
    case FM_ST_IN_USE:
    case FM_ST_TIMEOUT:
    case FM_ST_CONNECTION_NOT_VALID:
    case FM_ST_NVLINK_ERROR: return ErrorCode::kUnavailable;
    default: return ErrorCode::kInternal;
  }
}

Error fm_error(const std::string& what, fmReturn_t rc) {
  return make_error(code_of(rc), "fabric manager: " + what + ": " + return_code_name(rc));
}

struct Symbols {
  decltype(&::fmLibInit) lib_init = nullptr;
  decltype(&::fmLibShutdown) lib_shutdown = nullptr;
  decltype(&::fmConnect) connect = nullptr;
  decltype(&::fmDisconnect) disconnect = nullptr;
  decltype(&::fmGetSupportedFabricPartitions) partitions = nullptr;
  decltype(&::fmActivateFabricPartition) activate = nullptr;
  decltype(&::fmDeactivateFabricPartition) deactivate = nullptr;
};

class FmLibrary final : public FabricManager {
 public:
  FmLibrary(void* dl, Symbols s, fmHandle_t handle, std::string endpoint)
      : dl_(dl), s_(s), handle_(handle), endpoint_(std::move(endpoint)) {}
  ~FmLibrary() override {
    s_.disconnect(handle_);
    s_.lib_shutdown();
    ::dlclose(dl_);
  }

  Result<std::vector<Partition>> partitions() override {
    std::lock_guard lock(mu_);
    return list_locked();
  }

  Status activate(unsigned id) override {
    std::lock_guard lock(mu_);
    const fmReturn_t rc = s_.activate(handle_, id);
    if (rc == FM_ST_SUCCESS) return {};
    // IN_USE: already active (done) or an overlapping partition is (a real conflict).
    if (rc == FM_ST_IN_USE && is_active_locked(id)) return {};
    return fm_error("fmActivateFabricPartition(" + std::to_string(id) + ")", rc);
  }

  Status deactivate(unsigned id) override {
    std::lock_guard lock(mu_);
    const fmReturn_t rc = s_.deactivate(handle_, id);
    if (rc == FM_ST_SUCCESS) return {};
    // UNINITIALIZED: "specified partition is not activated" — the state wanted.
    if (rc == FM_ST_UNINITIALIZED && !is_active_locked(id)) return {};
    return fm_error("fmDeactivateFabricPartition(" + std::to_string(id) + ")", rc);
  }

  std::string endpoint() const override { return endpoint_; }

 private:
  Result<std::vector<Partition>> list_locked() {
    // 128 KiB: on the heap, not on a worker thread's stack.
    auto list = std::make_unique<fmFabricPartitionList_t>();
    std::memset(list.get(), 0, sizeof(*list));
    list->version = fmFabricPartitionList_version;
    const fmReturn_t rc = s_.partitions(handle_, list.get());
    if (rc != FM_ST_SUCCESS) return fm_error("fmGetSupportedFabricPartitions", rc);
    std::vector<Partition> out;
    const unsigned n = std::min<unsigned>(list->numPartitions, FM_MAX_FABRIC_PARTITIONS);
    for (unsigned i = 0; i < n; ++i) {
      const auto& info = list->partitionInfo[i];
      Partition p{info.partitionId, info.isActive != 0, {}};
      for (unsigned g = 0; g < std::min<unsigned>(info.numGpus, FM_MAX_NUM_GPUS); ++g) {
        const auto& gi = info.gpuInfo[g];
        p.gpus.push_back(PartitionGpu{gi.physicalId, gi.numNvLinksAvailable, gi.maxNumNvLinks, gi.nvlinkLineRateMBps});
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  bool is_active_locked(unsigned id) {
    auto list = list_locked();
    if (!list) return false;
    return std::any_of(list->begin(), list->end(), [&](const Partition& p) { return p.id == id && p.active; });
  }

  void* dl_;
  Symbols s_;
  fmHandle_t handle_;
  std::string endpoint_;
  std::mutex mu_;
};

template <class F>
bool resolve(void* dl, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(dl, name));
  return *out != nullptr;
}

}  // namespace

Result<std::unique_ptr<FabricManager>> open_fabric_manager(const LoadOptions& o) {
  const auto where = locate_fm_library(o.library_path, o.driver_root);
  void* dl = ::dlopen(where.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    std::string searched;
    for (const auto& s : where.searched) searched += (searched.empty() ? "" : ", ") + s;
    return make_error(ErrorCode::kFailedPrecondition,
                      "fabric manager: cannot load libnvfm.so.1 (searched " + searched + "): " + ::dlerror());
  }
  Symbols s;
  const std::pair<const char*, bool> found[] = {
      {"fmLibInit", resolve(dl, "fmLibInit", &s.lib_init)},
      {"fmLibShutdown", resolve(dl, "fmLibShutdown", &s.lib_shutdown)},
      {"fmConnect", resolve(dl, "fmConnect", &s.connect)},
      {"fmDisconnect", resolve(dl, "fmDisconnect", &s.disconnect)},
      {"fmGetSupportedFabricPartitions", resolve(dl, "fmGetSupportedFabricPartitions", &s.partitions)},
      {"fmActivateFabricPartition", resolve(dl, "fmActivateFabricPartition", &s.activate)},
      {"fmDeactivateFabricPartition", resolve(dl, "fmDeactivateFabricPartition", &s.deactivate)}};
  for (const auto& [name, ok] : found)
    if (!ok) {
      ::dlclose(dl);
      return make_error(ErrorCode::kFailedPrecondition,
                        "fabric manager: " + where.path + " does not export " + name + ", which nvdra needs");
    }
  if (fmReturn_t rc = s.lib_init(); rc != FM_ST_SUCCESS && rc != FM_ST_IN_USE) {
    ::dlclose(dl);
    return fm_error("fmLibInit", rc);
  }
  fmConnectParams_t params{};
  params.version = fmConnectParams_version;
  std::string address = o.endpoint.address;
  if (!o.endpoint.unix_socket && address.empty()) address = "127.0.0.1";
  std::strncpy(params.addressInfo, address.c_str(), FM_MAX_STR_LENGTH - 1);
  params.timeoutMs = static_cast<unsigned>(o.connect_timeout.count());
  params.addressIsUnixSocket = o.endpoint.unix_socket ? 1 : 0;
  params.addressType = o.endpoint.unix_socket ? NV_FM_API_ADDR_TYPE_UNIX : NV_FM_API_ADDR_TYPE_INET;
  fmHandle_t handle = nullptr;
  const std::string endpoint = (o.endpoint.unix_socket ? "unix:" : "tcp:") + address;
  fmReturn_t rc = s.connect(&params, &handle);
  if (rc == FM_ST_VERSION_MISMATCH) {
    // A library older than FM 570 knows only v1, the same struct without addressType.
    fmConnectParams_v1 v1{};
    v1.version = fmConnectV1Params_version1;
    std::memcpy(v1.addressInfo, params.addressInfo, sizeof v1.addressInfo);
    v1.timeoutMs = params.timeoutMs;
    v1.addressIsUnixSocket = params.addressIsUnixSocket;
    rc = s.connect(reinterpret_cast<fmConnectParams_t*>(&v1), &handle);
  }
  if (rc != FM_ST_SUCCESS) {
    s.lib_shutdown();
    ::dlclose(dl);
    return fm_error("fmConnect(" + endpoint + ")", rc);
  }
  return std::unique_ptr<FabricManager>(std::make_unique<FmLibrary>(dl, s, handle, endpoint));
}

}  // namespace nvdra::fm
