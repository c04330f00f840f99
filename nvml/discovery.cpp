#include "nvml/discovery.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace nvdra::nvml {
namespace {

namespace fs = std::filesystem;

// readlink /sys/bus/pci/devices/<bdf> -> "../../../devices/pci0000:64/0000:64:00.0/…": the first
// element after "devices/" is the root complex (upstream nvlib.go).
std::optional<std::string> pcie_root(const std::string& sysfs, const std::string& bdf) {
  std::error_code ec;
  const fs::path link = fs::read_symlink(fs::path(sysfs) / "bus/pci/devices" / bdf, ec);
  if (ec) return std::nullopt;
  const std::string s = link.string();
  const auto at = s.find("devices/");
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = s.substr(at + 8);
  const std::string root = rest.substr(0, rest.find('/'));
  if (root.rfind("pci", 0) != 0) return std::nullopt;
  return root;
}

std::optional<int64_t> numa_node(const std::string& sysfs, const std::string& bdf) {
  std::ifstream in(fs::path(sysfs) / "bus/pci/devices" / bdf / "numa_node");
  long long n = -1;
  if (!(in >> n) || n < 0) return std::nullopt;
  return static_cast<int64_t>(n);
}

}  // namespace

Result<DeviceModel> discover(GpuLibrary& lib, const DiscoveryOptions& options) {
  DeviceModel model;
  auto sys = lib.system_info();
  if (!sys) return sys.error();
  model.system = *sys;
  auto count = lib.gpu_count();
  if (!count) return count.error();
  for (unsigned i = 0; i < *count; ++i) {
    auto gpu = lib.gpu(i);
    if (!gpu) return gpu.error();
    if (gpu->product_name == "DGX Display" || gpu->product_name == "NVIDIA DGX Display") continue;
    gpu->pcie_root = pcie_root(options.sysfs_root, gpu->pci.bus_id);
    gpu->numa_node = numa_node(options.sysfs_root, gpu->pci.bus_id);
    if (gpu->mig_capable) {
      auto profiles = lib.mig_profiles(gpu->uuid);
      if (!profiles) return profiles.error();
      gpu->mig_profiles = std::move(profiles).value();
    }
    if (gpu->mig_enabled) {
      auto migs = lib.mig_devices(gpu->uuid);
      if (!migs) return migs.error();
      for (auto& m : *migs) m.parent_index = gpu->index;
      gpu->mig_devices = std::move(migs).value();
    }
    model.gpus.push_back(std::move(gpu).value());
  }
  return model;
}

std::string fabric_registering(const DeviceModel& model) {
  for (const auto& g : model.gpus)
    if (g.fabric && (g.fabric->state == 1 || g.fabric->state == 2))
      return "GPU " + g.uuid + ": NVLink fabric state " + (g.fabric->state == 1 ? "NOT_STARTED" : "IN_PROGRESS") +
             ", still registering with the fabric manager";
  return {};
}

Result<std::string> clique_id(const DeviceModel& model, bool strict) {
  std::string clique;
  for (const auto& g : model.gpus) {
    if (!g.fabric || g.fabric->state == 0) continue;  // NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
    if (!strict && (g.fabric->state != 3 || g.fabric->status != 0)) continue;  // not fabric-attached
    if (g.fabric->state != 3)
      return make_error(ErrorCode::kUnavailable, "GPU " + g.uuid + ": NVLink fabric state " +
                                                     std::to_string(g.fabric->state) + " is not COMPLETED (3)");
    if (g.fabric->status != 0)
      return make_error(ErrorCode::kUnavailable, "GPU " + g.uuid + ": NVLink fabric status " +
                                                     std::to_string(g.fabric->status) + " is not SUCCESS");
    const std::string id = g.fabric->clique();
    if (id.empty()) continue;
    if (!clique.empty() && clique != id)
      return make_error(ErrorCode::kFailedPrecondition,
                        "GPUs disagree on the NVLink clique: " + clique + " and " + id + " (GPU " + g.uuid + ")");
    clique = id;
  }
  return clique;
}

}  // namespace nvdra::nvml
