#pragma once
// The process-wide side of the mock: init reference count, the loaded profile and its state file,
// and the encoding of NVML handles. Handles are tagged integers (GPU index, GI id, CI id), not
// pointers, so they stay valid and compare equal across calls, dlclose and processes — the way a
// real GPU's handles are stable for a device — and a stale one is detected, not dereferenced.
//
// Environment (read at the first nvmlInit of a cycle, so a test may switch profiles between an
// nvmlShutdown and the next init):
//   NVDRA_MOCK_PROFILE     profile name under NVDRA_MOCK_PROFILES_DIR or the built-in profile dir,
//                          or a path to a .yaml file (required)
//   NVDRA_MOCK_PROFILES_DIR  overrides the profile directory resolved at build time
//   NVDRA_MOCK_HOST_ROOT   optional: keep the MIG caps files under <root>/proc/driver/nvidia (mig_caps.hpp)
//   NVDRA_MOCK_STATE_DIR   directory of the state file "<profile base name>.state"; default: beside
//                          a profile given by path, the build tree's nvml-mock-state/ for a name
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "nvml/mock/machine_profile.hpp"
#include "nvml/mock/mock_state.hpp"
#include "nvml/nvml_types.hpp"

namespace nvdra::nvml::mock {

struct Session {
  MachineProfile profile;
  std::unique_ptr<StateFile> state;
  // NVDRA_MOCK_HOST_ROOT: where the mock keeps <root>/proc/driver/nvidia/capabilities/gpu<minor>/mig/
  // in step with its GPU/compute instances, as the kernel driver does; "" = not kept.
  std::string caps_root;
  // GPUs this session has attached, as NVML does when a handle to one is asked for: the real library
  // keeps /dev/nvidia<minor> open until nvmlShutdown ends the session (and the nvidia driver's unbind
  // waits for it). With NVDRA_MOCK_HOST_ROOT the mock opens <root>/dev/nvidia<minor> (O_PATH), so the
  // process's /proc/self/fd shows the hold as a real one does; profile index -> fd.
  std::mutex attach_mu;
  std::map<unsigned, int> attached;
  // The kernel module's version this session started with (driver_version_now()); a later one
  // makes nvmlSystemGetDriverVersion answer LIB_RM_VERSION_MISMATCH, as after a driver upgrade.
  std::string driver_version;
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();
};

// The simulated node's driver (issue #30): NVDRA_MOCK_DRIVER_NODE names a file standing for the loaded
// kernel module (missing: DRIVER_NOT_LOADED); NVDRA_MOCK_DRIVER_VERSION_FILE, when it exists, holds the
// module's version (else the profile's).
bool driver_loaded();
std::string driver_version_now(const MachineProfile& profile);

// Attaches the profile's GPU `gpu` to `session` (see Session::attached); idempotent.
void attach_gpu(Session& session, unsigned gpu);

enum class Kind : unsigned { kGpu = 1, kMig = 2, kGi = 3, kCi = 4 };
struct Ref {
  Kind kind = Kind::kGpu;
  unsigned gpu = 0, gi = 0, ci = 0;
};

void* encode_handle(Ref ref);
std::optional<Ref> decode_handle(const void* handle);
template <class H>
H make_handle(Ref ref) {
  return static_cast<H>(encode_handle(ref));
}

nvmlReturn_t session_init();
nvmlReturn_t session_shutdown();
// nullptr when NVML is not initialised.
std::shared_ptr<Session> current_session();
// Rewrites the MIG caps files of every GPU from `m` (Session::caps_root; no-op when unset).
void sync_mig_caps(const Session& session, const MachineState& m);
// Why the last init failed (profile errors name the file, the GPU and the field); "" if it did not.
std::string last_init_error();

// NVML's string contract: INSUFFICIENT_SIZE unless the text and its NUL fit.
nvmlReturn_t copy_out(char* dst, unsigned length, const std::string& text);
// Deterministic "MIG-xxxxxxxx-…" UUID of a compute instance.
std::string mig_uuid(const std::string& gpu_uuid, unsigned gi, unsigned ci);

}  // namespace nvdra::nvml::mock
