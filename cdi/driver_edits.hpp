#pragma once
// The driver's common container edits from a DriverInventory (upstream-driver.md §5.1 "spec-level
// containerEdits"): control device nodes, read-only bind mounts of libraries, config files,
// binaries and firmware, IPC mounts, NVIDIA_CTK_LIBCUDA_DIR, and the nvidia-cdi-hook
// createContainer hooks (create-symlinks, enable-cuda-compat, update-ldcache,
// disable-device-node-modification) when DriverRoots::hook_path is set (resolve_cdi_hook). Pure; thread-safe.
#include "cdi/device_edits.hpp"
#include "cdi/driver_discovery.hpp"
#include "cdi/spec_model.hpp"

namespace nvdra::cdi {

ContainerEdits driver_edits(const DriverInventory& inv, const DriverRoots& roots);

// The HostView device-edit builders need for this driver (dev_root from discovery).
HostView host_view(const DriverInventory& inv, const DriverRoots& roots);

// Every /dev/nvidia<N> present.
ContainerEdits all_gpu_nodes(const DriverInventory& inv, const DriverRoots& roots);

// nvcdi's "management" mode (upstream-driver.md §5.2: the compute-domain driver's node-wide device
// "all"), as upstream's plugin writes it: every device node of the driver's /dev that nvcdi's globs
// find (/dev/nvidia*, the IMEX channels, the nvidia-caps capabilities), in its order ...
ContainerEdits management_nodes(const DriverInventory& inv, const DriverRoots& roots);
// ... and its common edits: the driver_edits() mounts less the ICD/config files, no device nodes,
// and only the create-symlinks and update-ldcache hooks.
ContainerEdits management_edits(const DriverInventory& inv, const DriverRoots& roots);

}  // namespace nvdra::cdi
