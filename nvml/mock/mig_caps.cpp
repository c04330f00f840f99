// The MIG capability files the kernel driver keeps under /proc/driver/nvidia/capabilities for
// each GPU and compute instance (the "access" files CDI reads the nvidia-cap minors from), kept in
// step with the mock's instances when NVDRA_MOCK_HOST_ROOT is set.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "nvml/mock/api_support.hpp"

namespace nvdra::nvml::mock {
namespace {

namespace fs = std::filesystem;

// nvidia-caps numbering (/proc/driver/nvidia-caps/mig-minors): config 1, monitor 2, then per GPU
// minor 15 GI slots of (GI access + 8 CI access) minors each.
constexpr unsigned kGiSlots = 15, kCiSlots = 8, kPerGi = 1 + kCiSlots;

unsigned gi_minor(unsigned gpu_minor, unsigned gi) { return 3 + gpu_minor * kGiSlots * kPerGi + gi * kPerGi; }

// Written once per instance, through a rename: a reader (the agent building a CDI spec for
// another instance of the same GPU) never sees an existing file vanish or half-written, as with
// the kernel's own files.
void ensure_access(const fs::path& dir, unsigned minor) {
  std::error_code ec;
  if (fs::exists(dir / "access", ec)) return;  // the content is a function of the path
  fs::create_directories(dir, ec);
  const fs::path tmp = dir / ".access.tmp";
  std::ofstream(tmp) << "DeviceFileMinor: " << minor << "\nDeviceFileMode: 292\nDeviceFileModify: 1\n";
  fs::rename(tmp, dir / "access", ec);
}

// Removes the entries of `dir` named `prefix<N>` that `wanted` does not hold.
void remove_stale(const fs::path& dir, const char* prefix, const std::set<std::string>& wanted) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && !wanted.count(name)) stale.push_back(e.path());
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

}  // namespace

void sync_mig_caps(const Session& session, const MachineState& m) {
  if (session.caps_root.empty()) return;
  for (std::size_t i = 0; i < m.gpus.size() && i < session.profile.gpus.size(); ++i) {
    const unsigned minor = session.profile.gpus[i].minor;
    const fs::path dir =
        fs::path(session.caps_root) / "proc/driver/nvidia/capabilities" / ("gpu" + std::to_string(minor)) / "mig";
    std::set<std::string> gis;
    for (const auto& gi : m.gpus[i].gis) {
      const std::string gi_name = "gi" + std::to_string(gi.id);
      gis.insert(gi_name);
      ensure_access(dir / gi_name, gi_minor(minor, gi.id));
      std::set<std::string> cis;
      for (const auto& ci : m.gpus[i].cis)
        if (ci.gi_id == gi.id) {
          cis.insert("ci" + std::to_string(ci.id));
          ensure_access(dir / gi_name / ("ci" + std::to_string(ci.id)), gi_minor(minor, gi.id) + 1 + ci.id);
        }
      remove_stale(dir / gi_name, "ci", cis);
    }
    remove_stale(dir, "gi", gis);
  }
}

}  // namespace nvdra::nvml::mock
