#include "cdi/driver_edits.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "test/cdi/fake_driver_root.hpp"

namespace nvdra::cdi {
namespace {

using testing::FakeDriverRoot;

const Mount* mount_at(const ContainerEdits& e, const std::string& container_path) {
  auto it = std::find_if(e.mounts.begin(), e.mounts.end(),
                         [&](const Mount& m) { return m.container_path == container_path; });
  return it == e.mounts.end() ? nullptr : &*it;
}

const Hook* hook(const ContainerEdits& e, const std::string& sub) {
  auto it = std::find_if(e.hooks.begin(), e.hooks.end(), [&](const Hook& h) { return h.args.at(1) == sub; });
  return it == e.hooks.end() ? nullptr : &*it;
}

TEST(DriverEdits, HostPathsAreUnderTheHostDriverRootWhileTheAgentReadsTheContainerRoot) {
  FakeDriverRoot fake;
  auto roots = fake.roots();
  roots.driver_root = "/run/nvidia/driver";
  auto inv = discover_driver(roots);
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  auto e = driver_edits(*inv, roots);
  const std::string libcuda = fake.lib_dir() + "/libcuda.so.580.95.05";
  const Mount* m = mount_at(e, libcuda);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->host_path, "/run/nvidia/driver" + libcuda);
  EXPECT_EQ(m->options, (std::vector<std::string>{"ro", "nosuid", "nodev", "rbind", "rprivate"}));
  ASSERT_NE(mount_at(e, "/usr/bin/nvidia-smi"), nullptr);
  ASSERT_NE(mount_at(e, "/lib/firmware/nvidia/580.95.05/gsp_ga10x.bin"), nullptr);
  ASSERT_NE(mount_at(e, "/etc/vulkan/icd.d/nvidia_icd.json"), nullptr);
  const Mount* ipc = mount_at(e, "/run/nvidia-persistenced/socket");
  ASSERT_NE(ipc, nullptr);
  EXPECT_TRUE(std::count(ipc->options.begin(), ipc->options.end(), "noexec"));
  EXPECT_EQ(e.env, std::vector<std::string>{"NVIDIA_CTK_LIBCUDA_DIR=" + fake.lib_dir()});
  ASSERT_EQ(e.device_nodes.size(), 4u);
  EXPECT_EQ(e.device_nodes[0].path, "/dev/nvidia-modeset") << "upstream's order";
  std::vector<std::string> order;
  for (const auto& m : e.mounts) order.push_back(m.container_path);
  ASSERT_GE(order.size(), 5u);
  EXPECT_EQ(order.front(), "/run/nvidia-persistenced/socket") << "upstream's order: IPC, binaries, Vulkan, libs, …";
  EXPECT_EQ(order[1], "/usr/bin/nvidia-cuda-mps-control");
  EXPECT_EQ(order.back(), "/usr/share/glvnd/egl_vendor.d/10_nvidia.json");
  EXPECT_FALSE(e.device_nodes[0].host_path) << "nodes come from the host's /dev";
}

TEST(DriverEdits, HooksUseTheConfiguredHookPathAsUpstream) {
  FakeDriverRoot fake;
  auto inv = discover_driver(fake.roots("/var/lib/kubelet/plugins/gpu.nvidia.com/nvidia-cdi-hook"));
  ASSERT_TRUE(inv.ok());
  auto e = driver_edits(*inv, fake.roots("/var/lib/kubelet/plugins/gpu.nvidia.com/nvidia-cdi-hook"));
  for (const auto& h : e.hooks) {
    EXPECT_EQ(h.hook_name, "createContainer");
    EXPECT_EQ(h.path, "/var/lib/kubelet/plugins/gpu.nvidia.com/nvidia-cdi-hook");
    EXPECT_EQ(h.args.at(0), "nvidia-cdi-hook");
  }
  const Hook* links = hook(e, "create-symlinks");
  ASSERT_NE(links, nullptr);
  EXPECT_TRUE(std::count(links->args.begin(), links->args.end(), "libcuda.so.1::" + fake.lib_dir() + "/libcuda.so"));
  const Hook* ld = hook(e, "update-ldcache");
  ASSERT_NE(ld, nullptr);
  EXPECT_EQ(ld->args, (std::vector<std::string>{"nvidia-cdi-hook", "update-ldcache", "--folder", fake.lib_dir()}));
  const Hook* compat = hook(e, "enable-cuda-compat");
  ASSERT_NE(compat, nullptr);
  EXPECT_EQ(compat->args.at(2), "--host-driver-version=580.95.05");
  EXPECT_NE(hook(e, "disable-device-node-modification"), nullptr);
  EXPECT_TRUE(driver_edits(*inv, fake.roots("")).hooks.empty()) << "no hook path, no hooks";
}

TEST(DriverEdits, AllGpuNodesListsEveryGpuMinorInOrder) {
  FakeDriverRoot fake;
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok());
  auto e = all_gpu_nodes(*inv, fake.roots());
  ASSERT_EQ(e.device_nodes.size(), 2u);
  EXPECT_EQ(e.device_nodes[0].path, "/dev/nvidia0");
  EXPECT_EQ(e.device_nodes[1].path, "/dev/nvidia1");
}

// Upstream's compute-domain base device "all" (nvcdi management mode, seen from its plugin): /dev/nvidia*
// byte-sorted, then the IMEX channels, then the capabilities; directories and other names left out.
TEST(DriverEdits, ManagementNodesFollowNvcdisGlobsInOrder) {
  FakeDriverRoot fake;
  const std::string dev = fake.host_root() + "/dev";
  testing::write_file(dev + "/nvidia-caps-imex-channels/channel0", "");
  testing::write_file(dev + "/nvidia-caps-imex-channels/channel10", "");
  testing::write_file(dev + "/nvidia-caps-imex-channels/channel2", "");
  testing::write_file(dev + "/nvidia-caps/nvidia-cap4096", "");
  testing::write_file(dev + "/nvidia-caps/nvidia-cap30", "");
  testing::write_file(dev + "/nvidia-caps/other", "");
  testing::write_file(dev + "/null", "");
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok());
  std::vector<std::string> paths;
  for (const auto& n : management_nodes(*inv, fake.roots()).device_nodes) paths.push_back(n.path);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0",
                       "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-caps-imex-channels/channel0",
                       "/dev/nvidia-caps-imex-channels/channel10", "/dev/nvidia-caps-imex-channels/channel2",
                       "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap4096"}));
}

TEST(DriverEdits, ManagementEditsLeaveOutConfigFilesDeviceNodesAndTwoHooks) {
  FakeDriverRoot fake;
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok());
  auto e = management_edits(*inv, fake.roots());
  auto all = driver_edits(*inv, fake.roots());
  EXPECT_TRUE(e.device_nodes.empty());
  EXPECT_EQ(mount_at(e, "/etc/vulkan/icd.d/nvidia_icd.json"), nullptr);
  EXPECT_EQ(mount_at(e, "/usr/share/glvnd/egl_vendor.d/10_nvidia.json"), nullptr);
  ASSERT_NE(mount_at(all, "/etc/vulkan/icd.d/nvidia_icd.json"), nullptr);
  EXPECT_NE(mount_at(e, "/usr/bin/nvidia-smi"), nullptr);
  EXPECT_NE(mount_at(e, "/run/nvidia-persistenced/socket"), nullptr);
  EXPECT_EQ(e.env, all.env);
  std::vector<std::string> hooks;
  for (const auto& h : e.hooks) hooks.push_back(h.args.at(1));
  EXPECT_EQ(hooks, (std::vector<std::string>{"create-symlinks", "update-ldcache"}));
}

}  // namespace
}  // namespace nvdra::cdi
