#include "cdi/driver_edits.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

#include "cdi/root_path.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kReadOnly{"ro", "nosuid", "nodev", "rbind", "rprivate"};
const std::vector<std::string> kIpcOptions{"nosuid", "nodev", "rbind", "rprivate", "noexec"};

Mount bind(const DriverRoots& roots, const std::string& source, const std::string& path,
           const std::vector<std::string>& options) {
  return Mount{join_root(roots.driver_root, source), path, {}, options};
}

std::string dir_of(const std::string& p) {
  auto d = p.substr(0, p.rfind('/'));
  return d.empty() ? "/" : d;
}

// As nvcdi writes them: argv[0] "nvidia-cdi-hook", debug output off.
Hook cdi_hook(const DriverRoots& roots, std::vector<std::string> args) {
  args.insert(args.begin(), "nvidia-cdi-hook");
  return Hook{"createContainer", roots.hook_path, std::move(args), {"NVIDIA_CTK_DEBUG=false"}, std::nullopt};
}

void add_symlinks_hook(const DriverInventory& inv, const DriverRoots& roots, ContainerEdits& e) {
  if (inv.library_links.empty()) return;
  std::vector<std::string> args{"create-symlinks"};
  for (const auto& l : inv.library_links) {
    args.push_back("--link");
    args.push_back(l.target + "::" + l.link);
  }
  e.hooks.push_back(cdi_hook(roots, std::move(args)));
}

void add_ldcache_hook(const DriverInventory& inv, const DriverRoots& roots, ContainerEdits& e) {
  std::vector<std::string> ld{"update-ldcache"};
  std::set<std::string> dirs;
  for (const auto& lib : inv.libraries) dirs.insert(dir_of(lib));
  for (const auto& d : dirs) {
    ld.push_back("--folder");
    ld.push_back(d);
  }
  e.hooks.push_back(cdi_hook(roots, std::move(ld)));
}

void add_hooks(const DriverInventory& inv, const DriverRoots& roots, ContainerEdits& e) {
  add_symlinks_hook(inv, roots, e);
  e.hooks.push_back(cdi_hook(roots, {"enable-cuda-compat", "--host-driver-version=" + inv.version}));
  add_ldcache_hook(inv, roots, e);
  e.hooks.push_back(cdi_hook(roots, {"disable-device-node-modification"}));
}

// The names in `dir` (seen by the agent) starting with `prefix` that are device nodes (plain files
// too: fake driver roots without CAP_MKNOD), byte-sorted as Go's filepath.Glob returns them.
std::vector<std::string> node_names(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    std::error_code sec;
    if (name.starts_with(prefix) && (entry.is_character_file(sec) || entry.is_regular_file(sec)))
      names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

HostView host_view(const DriverInventory& inv, const DriverRoots& roots) {
  return HostView{roots.host_root, inv.dev_root, inv.dev_root == "/" ? roots.host_root : roots.container_driver_root};
}

ContainerEdits driver_edits(const DriverInventory& inv, const DriverRoots& roots) {
  ContainerEdits e;
  const HostView host = host_view(inv, roots);
  for (const auto& node : inv.control_devices) e.device_nodes.push_back(device_node(node, host));
  // Mounts in the order upstream's specs list them (seen from its plugin on the simulated node): IPC
  // sockets, binaries by path, Vulkan files, libraries, firmware, then the other graphics files.
  auto vulkan = [](const DriverFile& f) { return f.path.find("/vulkan/") != std::string::npos; };
  std::vector<DriverFile> binaries = inv.binaries;
  std::sort(binaries.begin(), binaries.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (const auto& ipc : inv.ipc) e.mounts.push_back(bind(roots, ipc, ipc, kIpcOptions));
  for (const auto& b : binaries) e.mounts.push_back(bind(roots, b.source, b.path, kReadOnly));
  for (const auto& f : inv.config_files)
    if (vulkan(f)) e.mounts.push_back(bind(roots, f.source, f.path, kReadOnly));
  for (const auto& lib : inv.libraries) e.mounts.push_back(bind(roots, lib, lib, kReadOnly));
  for (const auto& fw : inv.firmware) e.mounts.push_back(bind(roots, fw, fw, kReadOnly));
  for (const auto& f : inv.config_files)
    if (!vulkan(f)) e.mounts.push_back(bind(roots, f.source, f.path, kReadOnly));
  e.env.push_back("NVIDIA_CTK_LIBCUDA_DIR=" + dir_of(inv.libcuda));
  if (!roots.hook_path.empty()) add_hooks(inv, roots, e);
  return e;
}

ContainerEdits all_gpu_nodes(const DriverInventory& inv, const DriverRoots& roots) {
  const std::string view = inv.dev_root == "/" ? roots.host_root : roots.container_driver_root;
  std::vector<int> minors;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(join_root(view, "/dev"), ec)) {
    auto name = entry.path().filename().string();
    if (name.size() > 6 && name.size() < 16 && name.starts_with("nvidia") &&
        std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      minors.push_back(std::stoi(name.substr(6)));
  }
  std::sort(minors.begin(), minors.end());
  ContainerEdits e;
  const HostView host = host_view(inv, roots);
  for (int m : minors) e.device_nodes.push_back(device_node("/dev/nvidia" + std::to_string(m), host));
  return e;
}

ContainerEdits management_nodes(const DriverInventory& inv, const DriverRoots& roots) {
  const std::string view = inv.dev_root == "/" ? roots.host_root : roots.container_driver_root;
  const HostView host = host_view(inv, roots);
  ContainerEdits e;
  // nvcdi's globs, in its order: /dev/nvidia* (GPUs and control nodes), the IMEX channels, the capabilities.
  const std::pair<std::string, std::string_view> globs[] = {
      {"/dev/", "nvidia"}, {"/dev/nvidia-caps-imex-channels/", "channel"}, {"/dev/nvidia-caps/", "nvidia-cap"}};
  for (const auto& [dir, prefix] : globs)
    for (const auto& name : node_names(join_root(view, dir), prefix))
      e.device_nodes.push_back(device_node(dir + name, host));
  return e;
}

ContainerEdits management_edits(const DriverInventory& inv, const DriverRoots& roots) {
  ContainerEdits e;
  std::vector<DriverFile> binaries = inv.binaries;
  std::sort(binaries.begin(), binaries.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (const auto& ipc : inv.ipc) e.mounts.push_back(bind(roots, ipc, ipc, kIpcOptions));
  for (const auto& b : binaries) e.mounts.push_back(bind(roots, b.source, b.path, kReadOnly));
  for (const auto& lib : inv.libraries) e.mounts.push_back(bind(roots, lib, lib, kReadOnly));
  for (const auto& fw : inv.firmware) e.mounts.push_back(bind(roots, fw, fw, kReadOnly));
  e.env.push_back("NVIDIA_CTK_LIBCUDA_DIR=" + dir_of(inv.libcuda));
  if (!roots.hook_path.empty()) {
    add_symlinks_hook(inv, roots, e);
    add_ldcache_hook(inv, roots, e);
  }
  return e;
}

}  // namespace nvdra::cdi
