#include "cdi/device_edits.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test/cdi/fake_driver_root.hpp"
#include "test/support/prerequisite.hpp"

namespace nvdra::cdi {
namespace {

std::vector<std::string> paths(const ContainerEdits& e) {
  std::vector<std::string> out;
  for (const auto& n : e.device_nodes) out.push_back(n.path);
  return out;
}

TEST(DeviceEdits, FullGpuGetsItsNodeAndDrmNodesFromSysfs) {
  testing::FakeDriverRoot fake;
  auto e = gpu_edits(GpuDevice{0, "00000000:3B:00.0"}, HostView{fake.host_root(), "/"});
  EXPECT_EQ(paths(e), (std::vector<std::string>{"/dev/nvidia0", "/dev/dri/card1", "/dev/dri/renderD128"}));
  EXPECT_FALSE(e.device_nodes[0].host_path) << "host path equals path on a host-installed driver";
  auto bare = gpu_edits(GpuDevice{1, ""}, HostView{fake.host_root(), "/"});
  EXPECT_EQ(paths(bare), std::vector<std::string>{"/dev/nvidia1"});
}

TEST(DeviceEdits, DriverContainerNodesTakeTheirHostPathFromTheDriverRoot) {
  auto e = gpu_edits(GpuDevice{2, ""}, HostView{"/", "/run/nvidia/driver"});
  ASSERT_EQ(e.device_nodes.size(), 1u);
  EXPECT_EQ(e.device_nodes[0].host_path, "/run/nvidia/driver/dev/nvidia2");
}

TEST(DeviceEdits, MigDeviceGetsParentNodeAndGiCiCapNodesFromHostFiles) {
  testing::FakeDriverRoot fake;
  auto e = read_mig_edits(MigDevice{0, 1, 0}, HostView{fake.host_root(), "/"});
  ASSERT_TRUE(e.ok()) << e.error().describe();
  EXPECT_EQ(paths(*e), (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap30",
                                                 "/dev/nvidia-caps/nvidia-cap31"}));
  const auto& gi = e->device_nodes[1];
  EXPECT_EQ(gi.type, "c");
  EXPECT_EQ(gi.major, 234);
  EXPECT_EQ(gi.minor, 30);
  EXPECT_EQ(gi.file_mode, 292u);
}

TEST(DeviceEdits, NodesThatAreCharacterDevicesAreStatedAsNvcdiWritesThem) {
  testing::FakeDriverRoot fake(testing::FakeDriverOptions{.char_devices = true});
  struct stat st {};
  ASSERT_EQ(::stat((fake.host_root() + "/dev/nvidia1").c_str(), &st), 0);
  NVDRA_REQUIRE_PREREQUISITE(S_ISCHR(st.st_mode), "mknod of character devices (root)");
  auto e = gpu_edits(GpuDevice{1, ""}, HostView{fake.host_root(), "/", fake.host_root()});
  const auto& n = e.device_nodes.at(0);
  EXPECT_EQ(n.major, 195);
  EXPECT_EQ(n.minor, 1);
  EXPECT_EQ(n.file_mode, st.st_mode & 07777);
  EXPECT_EQ(n.permissions, "rwm");
  EXPECT_EQ(n.type, "") << "nvcdi leaves the type to the runtime";
  EXPECT_FALSE(n.host_path);
}

TEST(DeviceEdits, CapNodesHaveNoHostPathEvenWithADriverContainer) {
  testing::FakeDriverRoot fake;
  auto e = read_mig_edits(MigDevice{0, 1, 0}, HostView{fake.host_root(), "/run/nvidia/driver"});
  ASSERT_TRUE(e.ok()) << e.error().describe();
  EXPECT_EQ(e->device_nodes[0].host_path, "/run/nvidia/driver/dev/nvidia0");
  EXPECT_FALSE(e->device_nodes[1].host_path) << "the runtime makes cap nodes from type/major/minor";
  EXPECT_FALSE(e->device_nodes[2].host_path);
}

TEST(DeviceEdits, MigDeviceWhoseCapsAreMissingIsAnErrorNamingTheCap) {
  testing::FakeDriverRoot fake;
  auto e = read_mig_edits(MigDevice{0, 5, 0}, HostView{fake.host_root(), "/"});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("gpu0/mig/gi5/access"), std::string::npos);
}

TEST(DeviceEdits, ImexChannelIsAWorldAccessibleCharNode) {
  auto e = imex_channel_edits(ImexChannel{7, 235});
  ASSERT_EQ(e.device_nodes.size(), 1u);
  const auto& n = e.device_nodes[0];
  EXPECT_EQ(n.path, "/dev/nvidia-caps-imex-channels/channel7");
  EXPECT_EQ(n.major, 235);
  EXPECT_EQ(n.minor, 7);
  EXPECT_EQ(n.file_mode, 0666u);
}

TEST(DeviceEdits, ImexDaemonGetsDomainEnvMountAndFabricCapOnlyWithClique) {
  ImexDaemon d{"4026", "cd-uid", "cd", "ns", "/var/lib/kubelet/plugins/compute-domain.nvidia.com/domains/cd-uid", 234,
               CapNode{4096, 256u}};
  auto e = imex_daemon_edits(d);
  EXPECT_EQ(e.env[0], "CLIQUE_ID=4026");
  EXPECT_EQ(e.mounts.at(0).container_path, "/imexd");
  EXPECT_EQ(paths(e), std::vector<std::string>{"/dev/nvidia-caps/nvidia-cap4096"});
  d.clique_id.clear();
  EXPECT_TRUE(imex_daemon_edits(d).device_nodes.empty());
}

TEST(DeviceEdits, MpsAddsPipeEnvAndBindMounts) {
  auto e = mps_edits(MpsSettings{"/p/pipe", "/p/shm", {"CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps"}});
  EXPECT_EQ(e.env, (std::vector<std::string>{"CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps",
                                             "CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps"}));
  ASSERT_EQ(e.mounts.size(), 2u);
  EXPECT_EQ(e.mounts[0].host_path, "/p/shm");
  EXPECT_EQ(e.mounts[0].container_path, "/dev/shm");
  EXPECT_EQ(e.mounts[1].container_path, "/tmp/nvidia-mps");
  EXPECT_EQ(e.mounts[1].options, (std::vector<std::string>{"rw", "nosuid", "nodev", "bind"}));
}

}  // namespace
}  // namespace nvdra::cdi
