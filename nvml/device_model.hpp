#pragma once
// The device model: what discovery found on this node, as plain data. The slice publisher, the
// claim code and the CLI read it; NVML types never appear here. Field meanings follow NVML
// (../shared/reference/nvml.md) and the names upstream publishes (upstream-driver.md §1–2).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvdra::nvml {

struct SystemInfo {
  std::string driver_version;    // as NVML prints it, e.g. "570.158.01"
  int cuda_driver_version = 0;   // major*1000 + minor*10, e.g. 12080
};

struct PciInfo {
  std::string bus_id;  // normalised as upstream publishes it: lower case, "0000:07:00.0", "0008:01:00.0"
  uint32_t domain = 0, bus = 0, device = 0;
  uint32_t device_id = 0;     // device<<16 | vendor, e.g. 0x20B010DE
  uint32_t subsystem_id = 0;  // subsystem device<<16 | subsystem vendor
};

struct MigPlacement {
  unsigned start = 0;  // memory slice
  unsigned size = 0;
  bool operator==(const MigPlacement&) const = default;
};

// One GPU-instance profile with its full-size compute instance (the only kind upstream uses).
struct MigProfileInfo {
  std::string name;        // go-nvlib string: "1g.5gb", "1g.5gb+me"
  unsigned gi_profile_index = 0;  // NVML_GPU_INSTANCE_PROFILE_* index
  unsigned gi_profile_id = 0;     // profile ID, as in device names (…-19-0)
  unsigned ci_profile_id = 0;     // full-size CI profile
  unsigned ci_engine_profile_id = 0;
  unsigned slice_count = 0;
  unsigned instance_count = 0;
  unsigned multiprocessors = 0, copy_engines = 0, decoders = 0, encoders = 0, jpeg_engines = 0, ofa_engines = 0;
  uint64_t memory_mib = 0;
  std::vector<MigPlacement> placements;
};

// A MIG device that exists now (static MIG, or created by dynamic MIG).
struct MigDeviceInfo {
  std::string uuid;         // "MIG-…"
  std::string parent_uuid;  // "GPU-…"
  unsigned parent_minor = 0;
  unsigned parent_index = 0;
  unsigned gi_id = 0, ci_id = 0;
  unsigned ci_profile_id = 0;
  MigProfileInfo profile;   // the GI profile (capacities come from here, as upstream)
  MigPlacement placement;   // of the GPU instance
  std::string canonical_name() const;  // gpu-<minor>-mig-<profile'>-<profileId>-<start>
};

struct FabricInfo {
  unsigned state = 0;   // NVML_GPU_FABRIC_STATE_*
  unsigned status = 0;  // nvmlReturn_t, meaningful when state is COMPLETED (3)
  std::string cluster_uuid;  // lower-case 8-4-4-4-12, "" when all zero
  uint32_t clique_id = 0;
  // "<clusterUuid>.<cliqueId>" when the GPU belongs to a multi-node clique, else "".
  std::string clique() const;
};

struct GpuInfo {
  unsigned index = 0;   // NVML index
  unsigned minor = 0;   // /dev/nvidia<minor>; device names use this
  std::string uuid;
  std::string product_name;
  std::string brand;          // go-nvlib string: "Nvidia", "Tesla", …
  std::string architecture;   // go-nvlib string: "Ampere", "Ada Lovelace", "Hopper", "Blackwell"
  int cuda_cc_major = 0, cuda_cc_minor = 0;
  uint64_t memory_bytes = 0;  // nvmlMemory_t.total
  PciInfo pci;
  std::optional<std::string> pcie_root;  // "pci0000:64", from sysfs; absent when unknown
  std::optional<int64_t> numa_node;      // from sysfs; absent when unknown or < 0
  std::optional<std::string> addressing_mode;  // "None", "HMM", "ATS"; absent when not supported
  std::optional<unsigned> module_id;  // nvmlDeviceGetModuleId; absent when NOT_SUPPORTED or 0
  unsigned virtualization_mode = 0;  // NVML_GPU_VIRTUALIZATION_MODE_*: 0 bare metal, 1 passthrough, 2 vGPU guest
  bool mig_capable = false;
  bool mig_enabled = false;       // current mode
  bool mig_pending_enabled = false;
  std::optional<FabricInfo> fabric;  // absent: fabric query NOT_SUPPORTED
  std::vector<MigProfileInfo> mig_profiles;  // empty unless MIG capable
  std::vector<MigDeviceInfo> mig_devices;    // existing MIG devices (MIG enabled only)
  std::string canonical_name() const;        // gpu-<minor>
};

struct DeviceModel {
  SystemInfo system;
  std::vector<GpuInfo> gpus;  // NVML index order
};

}  // namespace nvdra::nvml
