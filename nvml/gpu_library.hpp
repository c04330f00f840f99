#pragma once
// GpuLibrary — the NVML seam. Everything nvdra asks of the GPU driver goes through this interface:
// discovery facts, MIG mode and GPU/compute-instance create/destroy, and device events. NVML types
// never cross it; values are the plain structs of nvml/device_model.hpp.
//
// Contract:
//  * Calls are synchronous, may block (milliseconds; EventWatch::wait up to its timeout) and are
//    thread-safe. The agent never calls them on the io_context thread: it awaits them on the
//    worker pool, `co_await workers.run([&lib] { return lib.gpu_count(); })`.
//  * One GpuLibrary per process: open_nvml() dlopens libnvidia-ml.so.1, resolves the versioned
//    symbols once and holds one nvmlInit for the object's lifetime (nvmlShutdown + dlclose when it
//    is destroyed).
//  * Errors name the NVML call, the device and nvmlErrorString's text; the library does not log
//    (except once per missing optional symbol). Codes: NOT_FOUND -> kNotFound, INVALID_ARGUMENT ->
//    kInvalidArgument, NOT_SUPPORTED / INSUFFICIENT_RESOURCES -> kFailedPrecondition, IN_USE /
//    TIMEOUT / GPU_IS_LOST -> kUnavailable, NO_PERMISSION -> kPermissionDenied, others kInternal.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/result.hpp"
#include "nvml/call_gate.hpp"
#include "nvml/device_model.hpp"

namespace nvdra::nvml {

struct MigModeState {
  bool current_enabled = false;
  bool pending_enabled = false;
};

struct MigModeChange {
  bool active = false;  // false: accepted but pending until a GPU reset (Ampere where reset is impossible)
  std::string detail;   // nvmlErrorString of the activation status
};

// What to create: a GPU instance of `gi_profile_id` at `placement_start` holding one compute
// instance of CI profile index `ci_profile_index` (the full-size one for upstream's profiles).
struct MigDeviceRequest {
  unsigned gi_profile_id = 0;
  unsigned placement_start = 0;
  unsigned ci_profile_index = 0;
  unsigned ci_engine_profile = 0;
};

// A GPU instance without any compute instance: invisible to mig_devices() (which lists MIG device
// handles, one per CI). Only a create interrupted between its GI and CI steps leaves one behind.
struct BareGpuInstance {
  unsigned gi_id = 0;
  unsigned gi_profile_id = 0;
  MigPlacement placement;
};

inline constexpr unsigned kNoInstance = 0xFFFFFFFF;
inline constexpr uint64_t kEventXidCriticalError = 0x8;
inline constexpr uint64_t kEventDoubleBitEcc = 0x2;
inline constexpr uint64_t kEventSingleBitEcc = 0x1;
// nvmlDeviceGpuRecoveryAction_t.
inline constexpr unsigned kRecoveryNone = 0;
inline constexpr unsigned kRecoveryGpuReset = 1;
inline constexpr unsigned kRecoveryNodeReboot = 2;
inline constexpr unsigned kRecoveryDrainP2p = 3;
inline constexpr unsigned kRecoveryDrainAndReset = 4;
// "none", "gpu-reset", "node-reboot", "drain-p2p", "drain-and-reset", "<n>" for others.
std::string recovery_action_name(unsigned action);

struct GpuEvent {
  std::string gpu_uuid;  // the parent GPU
  uint64_t type = 0;     // kEvent* bit
  uint64_t data = 0;     // the XID for kEventXidCriticalError
  unsigned gi_id = kNoInstance;  // kNoInstance unless attributable to one MIG instance
  unsigned ci_id = kNoInstance;
};

struct WaitOutcome {
  enum class Kind { kEvent, kTimeout, kGpuLost };
  Kind kind = Kind::kTimeout;
  GpuEvent event;  // for kEvent
};

// A registration for device events on a set of GPUs. Not copyable; wait() from one thread at a time.
class EventWatch {
 public:
  virtual ~EventWatch() = default;
  // GPUs whose registration failed (upstream taints their devices "unmonitored"), with the reason.
  virtual const std::vector<std::pair<std::string, Error>>& unmonitored() const = 0;
  // Blocks up to `timeout` for the next event.
  virtual Result<WaitOutcome> wait(std::chrono::milliseconds timeout) = 0;
};

class GpuLibrary {
 public:
  virtual ~GpuLibrary() = default;

  virtual Result<SystemInfo> system_info() = 0;
  virtual Result<unsigned> gpu_count() = 0;
  // NVML facts of the full GPU at `index` (identity, PCI, memory, arch, MIG mode, addressing mode,
  // fabric). Leaves pcie_root/numa_node (sysfs), mig_profiles and mig_devices empty.
  virtual Result<GpuInfo> gpu(unsigned index) = 0;
  // GPU-instance profiles the GPU offers with their placements; empty when not MIG capable.
  virtual Result<std::vector<MigProfileInfo>> mig_profiles(const std::string& gpu_uuid) = 0;
  // MIG devices that exist now; empty when MIG is disabled.
  virtual Result<std::vector<MigDeviceInfo>> mig_devices(const std::string& gpu_uuid) = 0;
  // Fabric facts; nullopt when the GPU has no fabric (NOT_SUPPORTED or the symbol is missing).
  virtual Result<std::optional<FabricInfo>> fabric(const std::string& gpu_uuid) = 0;

  virtual Result<MigModeState> mig_mode(const std::string& gpu_uuid) = 0;
  virtual Result<MigModeChange> set_mig_mode(const std::string& gpu_uuid, bool enable) = 0;
  // Creates GI then CI; a CI failure destroys the GI again, so nothing half-made is left behind.
  virtual Result<MigDeviceInfo> create_mig_device(const std::string& gpu_uuid, const MigDeviceRequest& request) = 0;
  // Destroys the CI, then its GI. Already gone (or MIG disabled) counts as success: idempotent.
  virtual Status destroy_mig_device(const std::string& gpu_uuid, unsigned gi_id, unsigned ci_id) = 0;
  // GPU instances that hold no compute instance; empty when MIG is disabled.
  virtual Result<std::vector<BareGpuInstance>> bare_gpu_instances(const std::string& gpu_uuid) = 0;
  // Destroys the GPU instance `gi_id` (it must hold no CI). Already gone (or MIG disabled) = success.
  virtual Status destroy_gpu_instance(const std::string& gpu_uuid, unsigned gi_id) = 0;

  // Registers `event_types` (the supported subset, per GPU) on the given GPUs.
  virtual Result<std::unique_ptr<EventWatch>> watch_events(const std::vector<std::string>& gpu_uuids,
                                                           uint64_t event_types) = 0;

  // What the driver says the GPU needs to recover (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, R550+):
  // one of kRecovery*; nullopt where NVML cannot say (older driver, field not supported).
  virtual Result<std::optional<unsigned>> recovery_action(const std::string& gpu_uuid) = 0;

  // Ends this process's NVML session and starts a new one that attaches no GPU until a later call
  // asks for one (NVML_INIT_FLAG_NO_ATTACH): NVML keeps /dev/nvidia<minor> open for every GPU it has
  // attached, and the nvidia driver's unbind of a GPU waits for every open file of it. Called before
  // a GPU is handed to vfio-pci; handles are looked up per call. While the returned Shut lives,
  // every call that would look up a GPU (and so attach it again) is refused with kUnavailable,
  // naming `why`; calls already under way are waited for first. Blocking.
  virtual Result<CallGate::Shut> release_gpus(const std::string& why) = 0;

  // Turns persistence mode on unless it is on already (upstream, when a GPU comes back from vfio-pci:
  // nvidia-persistenced does not take hot-plugged GPUs, so the driver's legacy mode keeps it up).
  virtual Status enable_persistence(const std::string& gpu_uuid) = 0;

  // "…/libnvidia-ml.so.1 (driver 570.148.08)" for logs.
  virtual std::string describe() const = 0;
};

struct LoadOptions {
  std::string library_path;       // --nvml-library; empty: search the driver root, then ld.so
  std::string driver_root = "/";  // --nvidia-driver-root
};

// Loads and initialises NVML. The error names every path tried and dlerror()/nvmlErrorString;
// with the mock, also the profile problem (file, GPU, field).
Result<std::unique_ptr<GpuLibrary>> open_nvml(const LoadOptions& options);

}  // namespace nvdra::nvml
