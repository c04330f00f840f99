#include "cdi/driver_discovery.hpp"

#include <algorithm>
#include <filesystem>

#include <unistd.h>

#include "agent/base/log.hpp"
#include "cdi/driver_libraries.hpp"
#include "cdi/root_path.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kBinaryDirs{"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin",
                                           "/usr/local/sbin", "/opt/bin"};
// The toolkit's utility binaries (upstream-driver.md §5.1).
const std::vector<std::string> kBinaries{"nvidia-smi",           "nvidia-debugdump",       "nvidia-persistenced",
                                         "nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "nvidia-imex",
                                         "nvidia-imex-ctl"};
// Graphics ICD and layer files nvcdi mounts (not OpenCL's ICD: upstream's specs leave it out);
// each name lists alternatives, the first present wins.
const std::vector<std::vector<std::string>> kConfigFiles{
    {"/etc/vulkan/icd.d/nvidia_icd.json", "/usr/share/vulkan/icd.d/nvidia_icd.json"},
    {"/etc/vulkan/implicit_layer.d/nvidia_layers.json", "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json"},
    {"/usr/share/glvnd/egl_vendor.d/10_nvidia.json"},
    {"/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json"},
    {"/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json"},
    {"/usr/share/nvidia/nvoptix.bin"},
};
const std::vector<std::vector<std::string>> kIpc{
    {"/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"},
    {"/run/nvidia-fabricmanager/socket", "/var/run/nvidia-fabricmanager/socket"},
    {"/tmp/nvidia-mps"},
};
// In the order upstream's specs list them.
const std::vector<std::string> kControlDevices{"/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                               "/dev/nvidiactl"};
const std::vector<std::string> kFirmwareDirs{"/lib/firmware/nvidia/", "/usr/lib/firmware/nvidia/"};

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The first alternative present in the root, or "" after a debug line.
std::string first_present(RootResolver& root, const std::vector<std::string>& alternatives, const char* what) {
  for (const auto& p : alternatives)
    if (root.exists(p)) return p;
  logger("cdi")->debug("driver discovery: {} not found under {} (looked for {}), skipping", what, root.root(),
                       joined(alternatives));
  return {};
}

bool executable_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

// Only files that can run, as nvcdi (a non-executable nvidia-smi is no binary to inject).
void find_binaries(RootResolver& root, DriverInventory& inv) {
  for (const auto& name : kBinaries) {
    std::vector<std::string> paths;
    for (const auto& dir : kBinaryDirs) {
      auto p = dir + "/" + name;
      auto real = root.resolve(p);  // missing (most of the seven places): nothing more to look at
      if (real && executable_file(join_root(root.root(), *real))) paths.push_back(p);
    }
    auto found = paths.empty() ? std::string() : paths.front();
    if (found.empty()) {
      logger("cdi")->debug("driver discovery: no executable {} under {}, skipping", name, root.root());
      continue;
    }
    inv.binaries.push_back(DriverFile{found, root.resolve(found).value_or(found)});
  }
}

void find_firmware(const std::string& root, DriverInventory& inv) {
  for (const auto& dir : kFirmwareDirs) {
    auto inner = dir + inv.version;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(join_root(root, inner), ec)) {
      auto name = entry.path().filename().string();
      if (name.starts_with("gsp") && name.ends_with(".bin")) inv.firmware.push_back(inner + "/" + name);
    }
    if (!inv.firmware.empty()) break;
  }
  std::sort(inv.firmware.begin(), inv.firmware.end());
  if (inv.firmware.empty())
    logger("cdi")->debug("driver discovery: no GSP firmware under {}{{{}}}{}, skipping", root, joined(kFirmwareDirs),
                         inv.version);
}

}  // namespace

std::string resolve_cdi_hook(const DriverRoots& roots, const std::string& configured) {
  if (!configured.empty()) return configured;
  for (const char* p : kHostCdiHookPaths)
    if (executable_file(join_root(roots.host_root, p))) return p;
  if (executable_file(join_root(roots.container_driver_root, kDriverRootCdiHookPath)))
    return join_root(roots.driver_root, kDriverRootCdiHookPath);
  return {};
}

Result<DriverInventory> discover_driver(const DriverRoots& roots) {
  const std::string& root = roots.container_driver_root;
  RootResolver resolver(root);  // one walk: each directory of the root looked at once
  auto libs = discover_libraries(resolver);
  if (!libs) return libs.error();
  // Upstream looks for libcuda.so.<NVML's version> and fails prepare with "failed to locate
  // libcuda.so: libcuda.so.<version>: not found"; injecting another version's libraries would give
  // containers a user space that does not match the kernel module.
  if (!roots.nvml_version.empty() && libs->version != roots.nvml_version)
    return make_error(ErrorCode::kFailedPrecondition,
                      "failed to locate libcuda.so: libcuda.so." + roots.nvml_version + ": not found: NVML reports "
                      "driver version " + roots.nvml_version + " but the driver root " + root + " holds libcuda.so." +
                      libs->version + " (driver version " + libs->version + "); point --nvidia-driver-root at the "
                      "running driver's files");
  DriverInventory inv;
  inv.version = libs->version;
  inv.libcuda = libs->libcuda;
  inv.libcuda_link = libs->libcuda_link;
  inv.libraries = std::move(libs->libraries);
  inv.library_links = std::move(libs->links);
  for (const auto& alternatives : kConfigFiles) {
    auto found = first_present(resolver, alternatives, "config file");
    if (!found.empty()) inv.config_files.push_back(DriverFile{found, resolver.resolve(found).value_or(found)});
  }
  find_binaries(resolver, inv);
  find_firmware(root, inv);
  for (const auto& alternatives : kIpc) {
    auto found = first_present(resolver, alternatives, "IPC socket");
    if (!found.empty()) inv.ipc.push_back(found);
  }
  // Device nodes come from the driver root only when it has a real dev/ directory, as upstream.
  std::error_code ec;
  bool root_has_dev = roots.driver_root != "/" && fs::is_directory(fs::symlink_status(join_root(root, "/dev"), ec));
  inv.dev_root = root_has_dev ? roots.driver_root : "/";
  RootResolver host(roots.host_root);
  RootResolver& dev_view = root_has_dev ? resolver : host;
  for (const auto& node : kControlDevices) {
    if (dev_view.exists(node))
      inv.control_devices.push_back(node);
    else
      logger("cdi")->debug("driver discovery: {} not found under {}, skipping", node, dev_view.root());
  }
  return inv;
}

DriverDiscovery::DriverDiscovery(DriverRoots roots) : roots_(std::move(roots)) {}

Result<std::shared_ptr<const DriverInventory>> DriverDiscovery::current() {
  std::lock_guard lock(mu_);
  if (cached_ && resolve_in_root(roots_.container_driver_root, cached_->libcuda_link) == cached_->libcuda)
    return cached_;
  auto found = discover_driver(roots_);
  if (!found) return found.error();
  if (cached_ && cached_->version != found->version)
    logger("cdi")->info("driver version changed from {} to {}, rediscovered", cached_->version, found->version);
  cached_ = std::make_shared<const DriverInventory>(std::move(*found));
  return cached_;
}

void DriverDiscovery::invalidate() {
  std::lock_guard lock(mu_);
  cached_.reset();
}

}  // namespace nvdra::cdi
