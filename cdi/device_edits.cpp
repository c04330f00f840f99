#include "cdi/device_edits.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kImexChannelMode = 0666;

std::string strip_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// A node the runtime creates from type/major/minor alone (MIG capabilities, IMEX channels): no
// hostPath, as upstream writes them; the host need not have the node at any particular place.
DeviceNode char_node(std::string path, int64_t major, const CapNode& cap) {
  DeviceNode n;
  n.path = std::move(path);
  n.type = "c";
  n.major = major;
  n.minor = cap.minor;
  n.file_mode = cap.mode;
  return n;
}

std::string cap_path(int64_t minor) { return "/dev/nvidia-caps/nvidia-cap" + std::to_string(minor); }

// NVML's "00000000:3B:00.0" -> sysfs "0000:3b:00.0".
std::string sysfs_bdf(std::string_view bus_id) {
  std::string s(bus_id.size() > 12 ? bus_id.substr(bus_id.size() - 12) : bus_id);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

DeviceNode device_node(std::string path, const HostView& host) {
  DeviceNode n;
  auto root = strip_slash(host.dev_root);
  if (root != "/" && !root.empty()) n.host_path = root + path;
  struct stat st {};
  const std::string seen = (strip_slash(host.dev_view) == "/" ? std::string() : strip_slash(host.dev_view)) + path;
  if (!host.dev_view.empty() && ::stat(seen.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
    n.major = major(st.st_rdev);
    n.minor = minor(st.st_rdev);
    n.file_mode = st.st_mode & 07777;
    n.permissions = "rwm";
  }
  n.path = std::move(path);
  return n;
}

ContainerEdits gpu_edits(const GpuDevice& gpu, const HostView& host) {
  ContainerEdits e;
  e.device_nodes.push_back(device_node("/dev/nvidia" + std::to_string(gpu.minor), host));
  if (gpu.pci_bus_id.empty()) return e;
  auto drm = fs::path(strip_slash(host.host_root)) / "sys/bus/pci/devices" / sysfs_bdf(gpu.pci_bus_id) / "drm";
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(drm, ec)) {
    auto name = entry.path().filename().string();
    if (name.starts_with("card") || name.starts_with("renderD")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());  // directory order is not stable; specs must be
  for (const auto& name : names) e.device_nodes.push_back(device_node("/dev/dri/" + name, host));
  return e;
}

ContainerEdits mig_edits(const MigDevice& mig, const MigCaps& caps, const HostView& host) {
  ContainerEdits e = gpu_edits(GpuDevice{mig.parent_minor, {}}, host);
  e.device_nodes.push_back(char_node(cap_path(caps.gi.minor), caps.major, caps.gi));
  e.device_nodes.push_back(char_node(cap_path(caps.ci.minor), caps.major, caps.ci));
  return e;
}

Result<ContainerEdits> read_mig_edits(const MigDevice& mig, const HostView& host) {
  auto major = read_char_device_major(host.host_root, kNvidiaCapsDevice);
  if (!major) return major.error();
  auto gi = read_cap(host.host_root, mig_gi_cap(mig.parent_minor, mig.gi_id));
  if (!gi) return gi.error();
  auto ci = read_cap(host.host_root, mig_ci_cap(mig.parent_minor, mig.gi_id, mig.ci_id));
  if (!ci) return ci.error();
  return mig_edits(mig, MigCaps{*major, *gi, *ci}, host);
}

ContainerEdits imex_channel_edits(const ImexChannel& channel) {
  ContainerEdits e;
  CapNode node{channel.id, kImexChannelMode};
  e.device_nodes.push_back(char_node(
      "/dev/nvidia-caps-imex-channels/channel" + std::to_string(channel.id), channel.major, node));
  return e;
}

ContainerEdits imex_daemon_edits(const ImexDaemon& d) {
  ContainerEdits e;
  e.env = {"CLIQUE_ID=" + d.clique_id, "COMPUTE_DOMAIN_UUID=" + d.domain_uid,
           "COMPUTE_DOMAIN_NAME=" + d.domain_name, "COMPUTE_DOMAIN_NAMESPACE=" + d.domain_namespace};
  e.mounts.push_back(Mount{d.domain_dir, "/imexd", {}, {"rw", "nosuid", "nodev", "bind"}});
  if (!d.clique_id.empty())
    e.device_nodes.push_back(char_node(cap_path(d.fabric_mgmt.minor), d.caps_major, d.fabric_mgmt));
  return e;
}

ContainerEdits mps_edits(const MpsSettings& mps) {
  ContainerEdits e;
  e.env.push_back("CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps");
  e.env.insert(e.env.end(), mps.env.begin(), mps.env.end());
  const std::vector<std::string> opts{"rw", "nosuid", "nodev", "bind"};
  e.mounts.push_back(Mount{mps.shm_dir, "/dev/shm", {}, opts});
  e.mounts.push_back(Mount{mps.pipe_dir, "/tmp/nvidia-mps", {}, opts});
  return e;
}

}  // namespace nvdra::cdi
