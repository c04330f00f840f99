#pragma once
// A machine profile: the YAML file that tells the mock libnvidia-ml.so.1 which GPUs this "machine"
// has. Products come from the catalog (real facts); the profile adds identity (UUID, minor, PCI bus
// ID), MIG mode, a pre-created MIG layout and NVLink fabric membership. Every error names the file,
// the GPU and the field, and the allowed values.
//
// Format (see nvml/mock/profiles/*.yaml):
//   driverVersion: "570.148.08"      cudaDriverVersion: 12080
//   gpus:
//     - product: NVIDIA A100-SXM4-40GB
//       uuid: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
//       pciBusId: "00000000:07:00.0"
//       minor: 0                     # optional, default: position in the list
//       numaNode: 0                  # optional (nvmlDeviceGetNumaNodeId)
//       moduleId: 1                  # optional (nvmlDeviceGetModuleId)
//       serial: "1652020012345"      # optional
//       virtualizationMode: none     # none | passthrough | vgpu
//       migMode: enabled             # enabled | disabled, MIG-capable products only
//       migResetRequired: false      # Ampere: a mode change stays pending (VM passthrough)
//       migDevices:                  # GPU instances with one full-size compute instance each
//         - {profile: 3g.20gb, placement: 0}
//       fabric: {clusterUuid: <uuid>, cliqueId: 4026, state: completed, status: 0}  # Hopper+
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "nvml/mock/product_catalog.hpp"

namespace nvdra::nvml::mock {

struct FabricSpec {
  std::array<unsigned char, 16> cluster_uuid{};
  unsigned clique_id = 0;
  unsigned state = 3;   // NVML_GPU_FABRIC_STATE_COMPLETED
  unsigned status = 0;  // nvmlReturn_t
  unsigned health_mask = 0;
  unsigned health_summary = 1;
};

struct MigDeviceSpec {
  unsigned profile_id = 0;
  unsigned start = 0;
};

struct GpuSpec {
  const ProductSpec* product = nullptr;
  std::string uuid;
  unsigned minor = 0;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::string serial;
  std::optional<unsigned> numa_node;
  std::optional<unsigned> module_id;
  unsigned virtualization_mode = 0;
  bool mig_enabled = false;
  bool mig_reset_required = false;
  std::vector<MigDeviceSpec> mig_devices;
  std::optional<FabricSpec> fabric;  // set exactly when the product is fabric-capable
};

struct MachineProfile {
  std::string path;
  std::string driver_version;
  int cuda_driver_version = 0;
  std::vector<GpuSpec> gpus;
  std::string fingerprint;  // hash of the file's text: a changed profile resets the state file
};

// Parses and validates a profile's text; `path` only names the file in messages.
Result<MachineProfile> parse_profile(std::string_view text, const std::string& path);
Result<MachineProfile> load_profile(const std::string& path);

// Where NVDRA_MOCK_PROFILE points: a value with a '/' or ending in .yaml is a path, otherwise a
// name under `profiles_dir` ("dgx-a100" -> <dir>/dgx-a100.yaml).
std::string resolve_profile_path(std::string_view value, std::string_view profiles_dir);

}  // namespace nvdra::nvml::mock
