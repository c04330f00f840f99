#pragma once
// Container edits for one allocated device (upstream-driver.md §5.1, §5.2, §4.2). Inputs are plain
// structs the claims code fills from its device model; builders that read host files (MIG caps,
// /proc/devices, DRM nodes) block and are meant for the worker pool. All are thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "cdi/nvidia_caps.hpp"
#include "cdi/spec_model.hpp"

namespace nvdra::cdi {

// How the host looks from the agent. host_root: where the host's /proc and /sys are read ("/" on
// the host, --host-root in a container). dev_root: the host directory whose dev/ holds the NVIDIA
// device nodes (the host driver root when a driver container provides /dev, else "/"); written
// as the nodes' hostPath when it is not "/". dev_view: where the agent reads dev_root (its
// --container-driver-root or --host-root), to stat the nodes as nvcdi does; "" = do not stat.
struct HostView {
  std::string host_root = "/";
  std::string dev_root = "/";
  std::string dev_view;
};

struct GpuDevice {
  unsigned minor = 0;        // /dev/nvidia<minor>
  std::string pci_bus_id;    // NVML form "00000000:3B:00.0"; "" skips the DRM nodes
};

struct MigDevice {
  unsigned parent_minor = 0;
  unsigned gi_id = 0;
  unsigned ci_id = 0;
};

struct MigCaps {
  int64_t major = 0;  // "nvidia-caps" in /proc/devices
  CapNode gi;
  CapNode ci;
};

struct ImexChannel {
  unsigned id = 0;
  int64_t major = 0;  // "nvidia-caps-imex-channels" in /proc/devices
};

struct ImexDaemon {
  std::string clique_id;         // "" when the node has no clique: no fabric cap node then
  std::string domain_uid;
  std::string domain_name;
  std::string domain_namespace;
  std::string domain_dir;        // host dir mounted at /imexd
  int64_t caps_major = 0;        // needed only with a clique id
  CapNode fabric_mgmt;           // "fabric-imex-mgmt" cap, only with a clique id
};

struct MpsSettings {
  std::string pipe_dir;  // host dirs of the claim's control daemon
  std::string shm_dir;
  std::vector<std::string> env;  // extra "NAME=value" entries, appended after the upstream ones
};

// A node at `path` in the container, taken from dev_root on the host. When the node is a character
// device, its major, minor, file mode and "rwm" are filled in from stat, as nvcdi writes them (the
// type is left for the runtime, as nvcdi does). Blocking (one stat).
DeviceNode device_node(std::string path, const HostView& host);

// /dev/nvidia<minor>, plus the GPU's /dev/dri/card* and renderD* nodes found under
// <host_root>/sys/bus/pci/devices/<bdf>/drm.
ContainerEdits gpu_edits(const GpuDevice& gpu, const HostView& host);

// The parent GPU's edits plus the GI and CI nvidia-cap char nodes.
ContainerEdits mig_edits(const MigDevice& mig, const MigCaps& caps, const HostView& host);
// Same, reading the caps minors and major from the host; errors name the files looked in.
Result<ContainerEdits> read_mig_edits(const MigDevice& mig, const HostView& host);

ContainerEdits imex_channel_edits(const ImexChannel& channel);
ContainerEdits imex_daemon_edits(const ImexDaemon& daemon);

// CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps, /dev/shm and /tmp/nvidia-mps bind mounts.
ContainerEdits mps_edits(const MpsSettings& mps);

}  // namespace nvdra::cdi
