#pragma once
// Finds what a CUDA container needs from the NVIDIA driver under --nvidia-driver-root, the way
// nvidia-container-toolkit's CDI generator does (upstream-driver.md §5.1): the driver version's
// user-space libraries (ld.so.cache, then the usual library directories), ICD/config files,
// utility binaries, GSP firmware, IPC sockets and control device nodes. Files are read through
// container_driver_root (where the agent sees the driver) and written to specs as host paths
// under driver_root. Optional pieces that are missing are skipped with a debug line; a missing
// libcuda is an error that names every place looked in. Blocking; see DriverDiscovery for caching.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::cdi {

struct DriverRoots {
  std::string driver_root = "/";            // --nvidia-driver-root: the host path
  std::string container_driver_root = "/";  // --container-driver-root: where the agent reads it
  std::string host_root = "/";              // --host-root: the host's /, for /dev when the root has none
  std::string hook_path;                    // nvidia-cdi-hook on the host (resolve_cdi_hook); "" = no hooks
  // NVML's driver version: the driver root must hold libcuda.so.<it> ("" = take what is there).
  std::string nvml_version;
  bool operator==(const DriverRoots&) const = default;
};

// Where the NVIDIA Container Toolkit puts nvidia-cdi-hook, as host paths: a host install, the GPU
// Operator's toolkit directory. A driver root's own /usr/bin/nvidia-cdi-hook comes last.
inline constexpr const char* kHostCdiHookPaths[] = {"/usr/bin/nvidia-cdi-hook",
                                                    "/usr/local/nvidia/toolkit/nvidia-cdi-hook"};
inline constexpr const char* kDriverRootCdiHookPath = "/usr/bin/nvidia-cdi-hook";

// The hook path to write into specs: `configured` (--nvidia-cdi-hook-path) when set, else the first
// executable file of kHostCdiHookPaths under host_root, then kDriverRootCdiHookPath under the driver
// root (seen through container_driver_root, written under driver_root); "" when there is none.
// Blocking (a few stats).
std::string resolve_cdi_hook(const DriverRoots& roots, const std::string& configured);

// A symlink to recreate in the container (create-symlinks hook): link -> target, as on the host.
struct DriverLink {
  std::string target;  // the link text, e.g. "libcuda.so.1"
  std::string link;    // inside the root, e.g. "/usr/lib/x86_64-linux-gnu/libcuda.so"
  bool operator==(const DriverLink&) const = default;
};

// A file to bind-mount: host_path = driver_root + source; the container sees it at path.
struct DriverFile {
  std::string path;    // inside the root and in the container
  std::string source;  // the real file inside the root (symlinks resolved)
  bool operator==(const DriverFile&) const = default;
};

// Every path below is inside the driver root ("/usr/bin/nvidia-smi"), except device nodes,
// which are container paths ("/dev/nvidiactl") taken from dev_root.
struct DriverInventory {
  std::string version;                   // "580.95.05", from libcuda.so.<version>
  std::string libcuda;                   // the real libcuda file
  std::string libcuda_link;              // the libcuda.so.1 it was found by (cache check)
  std::vector<std::string> libraries;    // real files named *.so.<version>, sorted
  std::vector<DriverLink> library_links; // sorted by link
  std::vector<DriverFile> config_files;  // Vulkan/EGL/OpenCL ICD and layer files
  std::vector<DriverFile> binaries;
  std::vector<std::string> firmware;     // lib/firmware/nvidia/<version>/gsp*.bin
  std::vector<std::string> ipc;          // sockets and the MPS pipe dir
  std::vector<std::string> control_devices;  // /dev/nvidiactl, /dev/nvidia-uvm, …
  std::string dev_root = "/";            // host dir whose dev/ holds the nodes (HostView::dev_root)
  bool operator==(const DriverInventory&) const = default;
};

// One full discovery, uncached.
Result<DriverInventory> discover_driver(const DriverRoots& roots);

// Cached discovery. current() returns the last inventory while its libcuda.so.1 still resolves to
// the same file (one path walk: same driver version) and rediscovers when it changed. Thread-safe: concurrent callers
// serialise on a mutex; blocking (worker pool).
class DriverDiscovery {
 public:
  explicit DriverDiscovery(DriverRoots roots);
  Result<std::shared_ptr<const DriverInventory>> current();
  void invalidate();
  const DriverRoots& roots() const { return roots_; }

 private:
  DriverRoots roots_;
  std::mutex mu_;
  std::shared_ptr<const DriverInventory> cached_;
};

}  // namespace nvdra::cdi
