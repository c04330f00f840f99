// The MIG capability files the kernel driver keeps under /proc/driver/nvidia/capabilities for
// each GPU and compute instance (the "access" files CDI reads the nvidia-cap minors from), kept in
// step with the mock's instances when NVDRA_MOCK_HOST_ROOT is set.
#include <filesystem>
#include <fstream>
#include <system_error>

#include "nvml/mock/api_support.hpp"

namespace nvdra::nvml::mock {
namespace {

namespace fs = std::filesystem;

// nvidia-caps numbering (/proc/driver/nvidia-caps/mig-minors): config 1, monitor 2, then per GPU
// minor 15 GI slots of (GI access + 8 CI access) minors each.
constexpr unsigned kGiSlots = 15, kCiSlots = 8, kPerGi = 1 + kCiSlots;

unsigned gi_minor(unsigned gpu_minor, unsigned gi) { return 3 + gpu_minor * kGiSlots * kPerGi + gi * kPerGi; }

void write_access(const fs::path& dir, unsigned minor) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream(dir / "access") << "DeviceFileMinor: " << minor << "\nDeviceFileMode: 292\nDeviceFileModify: 1\n";
}

}  // namespace

void sync_mig_caps(const Session& session, const MachineState& m) {
  if (session.caps_root.empty()) return;
  for (std::size_t i = 0; i < m.gpus.size() && i < session.profile.gpus.size(); ++i) {
    const unsigned minor = session.profile.gpus[i].minor;
    const fs::path dir =
        fs::path(session.caps_root) / "proc/driver/nvidia/capabilities" / ("gpu" + std::to_string(minor)) / "mig";
    std::error_code ec;
    fs::remove_all(dir, ec);
    for (const auto& gi : m.gpus[i].gis) {
      const fs::path gi_dir = dir / ("gi" + std::to_string(gi.id));
      write_access(gi_dir, gi_minor(minor, gi.id));
      for (const auto& ci : m.gpus[i].cis)
        if (ci.gi_id == gi.id) write_access(gi_dir / ("ci" + std::to_string(ci.id)), gi_minor(minor, gi.id) + 1 + ci.id);
    }
  }
}

}  // namespace nvdra::nvml::mock
