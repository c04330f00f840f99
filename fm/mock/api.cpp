// The mock libnvfm.so.1's exported FabricManager API (fm/fm_types.hpp), with FM's rules: one
// connection per fmConnect, partition calls only in Shared NVSwitch mode, an overlapping or active
// partition cannot be activated (FM_ST_IN_USE), an inactive one cannot be deactivated
// (FM_ST_UNINITIALIZED), failures queued in the state file answered first.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <cstring>
#include <mutex>
#include <string>

#include "fm/fm_types.hpp"
#include "fm/mock/fm_machine.hpp"

#ifndef NVDRA_MOCK_PROFILES_DIR
#error "the build sets NVDRA_MOCK_PROFILES_DIR"
#endif

using nvdra::fm::Partition;
using namespace nvdra::fm::mock;

namespace {

struct Global {
  std::mutex mu;
  unsigned inits = 0;
  FmProfile profile;
  std::string state_path;
};
Global& global() {
  static Global g;
  return g;
}
fmHandle_t const kHandle = reinterpret_cast<fmHandle_t>(static_cast<uintptr_t>(0x4E564641));  // "NVFA"

std::string profile_path() {
  const char* name = std::getenv("NVDRA_MOCK_PROFILE");
  if (name == nullptr || *name == '\0') return "";
  const std::string v(name);
  if (v.find('/') != std::string::npos || (v.size() > 5 && v.compare(v.size() - 5, 5, ".yaml") == 0)) return v;
  const char* dir = std::getenv("NVDRA_MOCK_PROFILES_DIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : NVDRA_MOCK_PROFILES_DIR) + "/" + v + ".yaml";
}

// Counts the call, answers a queued failure; FM_ST_SUCCESS means "go on".
fmReturn_t enter(FmState& s, const char* function) {
  ++s.calls[function];
  for (const auto& f : s.failures)
    if (std::find(std::begin(kFailureKeys), std::end(kFailureKeys), f.function) == std::end(kFailureKeys)) {
      std::fprintf(stderr, "mock libnvfm: state file failure function \"%s\" is not one of connect, "
                           "fmGetSupportedFabricPartitions, fmActivateFabricPartition, fmDeactivateFabricPartition\n",
                   f.function.c_str());
      return FM_ST_GENERIC_ERROR;
    }
  for (auto it = s.failures.begin(); it != s.failures.end(); ++it) {
    if (it->function != function) continue;
    const int rc = it->rc;
    if (--it->remaining == 0) s.failures.erase(it);
    return static_cast<fmReturn_t>(rc);
  }
  return FM_ST_SUCCESS;
}

fmReturn_t usable(const Global& g, const FmState& s, fmHandle_t handle) {
  if (g.inits == 0) return FM_ST_UNINITIALIZED;
  if (handle != kHandle) return FM_ST_BADPARAM;
  if (!s.running.value_or(g.profile.running)) return FM_ST_CONNECTION_NOT_VALID;
  if (!g.profile.shared_nvswitch) return FM_ST_NOT_SUPPORTED;
  return FM_ST_SUCCESS;
}

const Partition* find(const Global& g, unsigned id) {
  for (const auto& p : g.profile.partitions)
    if (p.id == id) return &p;
  return nullptr;
}

bool is_active(const FmState& s, unsigned id) { return std::find(s.active.begin(), s.active.end(), id) != s.active.end(); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) fmReturn_t fmLibInit(void) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  if (g.inits > 0) return FM_ST_IN_USE;
  const std::string path = profile_path();
  if (path.empty()) return FM_ST_GENERIC_ERROR;
  auto profile = load_fm_profile(path);
  if (!profile) return FM_ST_GENERIC_ERROR;
  g.profile = std::move(*profile);
  g.state_path = state_path_for_profile(path);
  ++g.inits;
  return FM_ST_SUCCESS;
}

__attribute__((visibility("default"))) fmReturn_t fmLibShutdown(void) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  if (g.inits == 0) return FM_ST_UNINITIALIZED;
  g.inits = 0;
  return FM_ST_SUCCESS;
}

__attribute__((visibility("default"))) fmReturn_t fmConnect(fmConnectParams_t* params, fmHandle_t* handle) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  if (g.inits == 0) return FM_ST_UNINITIALIZED;
  if (params == nullptr || handle == nullptr) return FM_ST_BADPARAM;
  // v2 (FM 570+, what upstream's plugin sends) or v1: v1's fields sit at the same offsets in v2.
  const bool v2 = params->version == fmConnectParams_version;
  if (!v2 && params->version != fmConnectV1Params_version1) return FM_ST_VERSION_MISMATCH;
  if (v2 && params->addressType != (params->addressIsUnixSocket ? NV_FM_API_ADDR_TYPE_UNIX : NV_FM_API_ADDR_TYPE_INET))
    return FM_ST_BADPARAM;
  const std::string address(params->addressInfo, strnlen(params->addressInfo, FM_MAX_STR_LENGTH));
  fmReturn_t rc = FM_ST_SUCCESS;
  with_state(g.state_path, [&](FmState& s) {
    if ((rc = enter(s, "connect")) != FM_ST_SUCCESS) return true;
    s.last_connect = (params->addressIsUnixSocket ? "unix:" : "tcp:") + address;
    struct stat st {};
    if (!g.profile.present || !s.running.value_or(g.profile.running)) rc = FM_ST_CONNECTION_NOT_VALID;
    else if (params->addressIsUnixSocket && ::stat(address.c_str(), &st) != 0) rc = FM_ST_CONNECTION_NOT_VALID;
    else if (!params->addressIsUnixSocket && address != g.profile.tcp_address &&
             address != g.profile.tcp_address + ":" + std::to_string(FM_CMD_PORT_NUMBER))
      rc = FM_ST_CONNECTION_NOT_VALID;
    return true;
  });
  if (rc == FM_ST_SUCCESS) *handle = kHandle;
  return rc;
}

__attribute__((visibility("default"))) fmReturn_t fmDisconnect(fmHandle_t handle) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  if (g.inits == 0) return FM_ST_UNINITIALIZED;
  return handle == kHandle ? FM_ST_SUCCESS : FM_ST_BADPARAM;
}

__attribute__((visibility("default"))) fmReturn_t fmGetSupportedFabricPartitions(fmHandle_t handle,
                                                                                 fmFabricPartitionList_t* list) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  if (list == nullptr) return FM_ST_BADPARAM;
  if (list->version != fmFabricPartitionList_version) return FM_ST_VERSION_MISMATCH;
  fmReturn_t rc = FM_ST_SUCCESS;
  with_state(g.state_path, [&](FmState& s) {
    if ((rc = enter(s, "fmGetSupportedFabricPartitions")) != FM_ST_SUCCESS) return true;
    if ((rc = usable(g, s, handle)) != FM_ST_SUCCESS) return true;
    list->numPartitions = static_cast<unsigned>(std::min<size_t>(g.profile.partitions.size(), FM_MAX_FABRIC_PARTITIONS));
    list->maxNumPartitions = FM_MAX_FABRIC_PARTITIONS;
    for (unsigned i = 0; i < list->numPartitions; ++i) {
      const auto& p = g.profile.partitions[i];
      auto& info = list->partitionInfo[i];
      info.partitionId = p.id;
      info.isActive = is_active(s, p.id) ? 1 : 0;
      info.numGpus = static_cast<unsigned>(p.gpus.size());
      for (unsigned k = 0; k < info.numGpus; ++k) {
        // HGX H100 and later: FM reports no UUID or bus id, only the physical (module) id.
        info.gpuInfo[k] = fmFabricPartitionGpuInfo_t{};
        info.gpuInfo[k].physicalId = p.gpus[k].module_id;
        info.gpuInfo[k].numNvLinksAvailable = p.gpus[k].nvlinks_available;
        info.gpuInfo[k].maxNumNvLinks = p.gpus[k].nvlinks_max;
        info.gpuInfo[k].nvlinkLineRateMBps = p.gpus[k].nvlink_rate_mbps;
      }
    }
    return true;
  });
  return rc;
}

__attribute__((visibility("default"))) fmReturn_t fmActivateFabricPartition(fmHandle_t handle, fmFabricPartitionId_t id) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  fmReturn_t rc = FM_ST_SUCCESS;
  with_state(g.state_path, [&](FmState& s) {
    if ((rc = enter(s, "fmActivateFabricPartition")) != FM_ST_SUCCESS) return true;
    if ((rc = usable(g, s, handle)) != FM_ST_SUCCESS) return true;
    const Partition* p = find(g, id);
    if (p == nullptr) return rc = FM_ST_BADPARAM, true;
    for (unsigned other : s.active)
      if (const Partition* q = find(g, other); q != nullptr && (other == id || q->overlaps(*p)))
        return rc = FM_ST_IN_USE, true;
    s.active.push_back(id);
    std::sort(s.active.begin(), s.active.end());
    return true;
  });
  return rc;
}

__attribute__((visibility("default"))) fmReturn_t fmDeactivateFabricPartition(fmHandle_t handle,
                                                                              fmFabricPartitionId_t id) {
  Global& g = global();
  std::lock_guard lock(g.mu);
  fmReturn_t rc = FM_ST_SUCCESS;
  with_state(g.state_path, [&](FmState& s) {
    if ((rc = enter(s, "fmDeactivateFabricPartition")) != FM_ST_SUCCESS) return true;
    if ((rc = usable(g, s, handle)) != FM_ST_SUCCESS) return true;
    if (find(g, id) == nullptr) return rc = FM_ST_BADPARAM, true;
    if (!is_active(s, id)) return rc = FM_ST_UNINITIALIZED, true;
    s.active.erase(std::find(s.active.begin(), s.active.end(), id));
    return true;
  });
  return rc;
}

}  // extern "C"
