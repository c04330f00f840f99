#include "cdi/driver_discovery.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test/cdi/fake_driver_root.hpp"

namespace nvdra::cdi {
namespace {

using testing::FakeDriverOptions;
using testing::FakeDriverRoot;

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::vector<std::string> expected_libraries(const FakeDriverRoot& fake) {
  std::vector<std::string> out;
  for (const auto& lib : testing::fake_driver_libraries())
    out.push_back(fake.lib_dir() + "/" + lib.name + "." + fake.options().version);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DriverDiscovery, FindsEveryPieceOfTheDriverVersion) {
  FakeDriverRoot fake;
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  EXPECT_EQ(inv->version, "580.95.05");
  EXPECT_EQ(inv->libcuda, fake.lib_dir() + "/libcuda.so.580.95.05");
  EXPECT_EQ(inv->libraries, expected_libraries(fake)) << "no libz, no stale libcuda.so.470.42.01";
  EXPECT_TRUE(std::count(inv->library_links.begin(), inv->library_links.end(),
                         DriverLink{"libcuda.so.580.95.05", fake.lib_dir() + "/libcuda.so.1"}));
  EXPECT_TRUE(std::count(inv->library_links.begin(), inv->library_links.end(),
                         DriverLink{"libcuda.so.1", fake.lib_dir() + "/libcuda.so"}));
  EXPECT_TRUE(std::none_of(inv->library_links.begin(), inv->library_links.end(),
                           [](const DriverLink& l) { return l.link.find("libz") != std::string::npos; }));
  std::vector<std::string> bins;
  for (const auto& b : inv->binaries) bins.push_back(b.path);
  EXPECT_EQ(bins, (std::vector<std::string>{"/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump",
                                            "/usr/bin/nvidia-persistenced", "/usr/bin/nvidia-cuda-mps-control",
                                            "/usr/bin/nvidia-cuda-mps-server"}));
  EXPECT_EQ(inv->firmware, (std::vector<std::string>{"/lib/firmware/nvidia/580.95.05/gsp_ga10x.bin",
                                                     "/lib/firmware/nvidia/580.95.05/gsp_tu10x.bin"}));
  EXPECT_EQ(inv->ipc, std::vector<std::string>{"/run/nvidia-persistenced/socket"});
  EXPECT_EQ(inv->control_devices, (std::vector<std::string>{"/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                                            "/dev/nvidia-uvm-tools", "/dev/nvidiactl"}));
  EXPECT_EQ(inv->config_files.size(), 2u) << "Vulkan and EGL ICDs; not OpenCL's, as upstream";
  EXPECT_EQ(inv->dev_root, "/");
}

TEST(DriverDiscovery, WithoutLdCacheTheLibraryDirectoriesAreSearched) {
  FakeDriverRoot fake(FakeDriverOptions{.ld_cache = false});
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  EXPECT_EQ(inv->libraries, expected_libraries(fake));
}

TEST(DriverDiscovery, AbsoluteSymlinksResolveInsideTheDriverRoot) {
  FakeDriverRoot fake(FakeDriverOptions{.absolute_links = true});
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  EXPECT_EQ(inv->libraries, expected_libraries(fake));
}

TEST(DriverDiscovery, MissingLibcudaIsAnErrorSayingWhereItLooked) {
  FakeDriverRoot fake(FakeDriverOptions{.with_libcuda = false});
  auto inv = discover_driver(fake.roots());
  ASSERT_FALSE(inv.ok());
  const auto& msg = inv.error().message;
  EXPECT_NE(msg.find("libcuda.so.1"), std::string::npos);
  EXPECT_NE(msg.find(fake.driver_root() + "/etc/ld.so.cache"), std::string::npos);
  EXPECT_NE(msg.find(fake.driver_root() + "/usr/lib64"), std::string::npos);
  EXPECT_NE(msg.find("--nvidia-driver-root"), std::string::npos);
  EXPECT_EQ(inv.error().field, "nvidia-driver-root");
}

TEST(DriverDiscovery, MissingOptionalPiecesAreSkipped) {
  FakeDriverRoot fake;
  std::filesystem::remove_all(fake.driver_root() + "/lib/firmware");
  std::filesystem::remove_all(fake.driver_root() + "/run");
  std::filesystem::remove(fake.driver_root() + "/usr/bin/nvidia-debugdump");
  std::filesystem::remove(fake.host_root() + "/dev/nvidia-modeset");
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  EXPECT_TRUE(inv->firmware.empty());
  EXPECT_TRUE(inv->ipc.empty());
  EXPECT_EQ(inv->binaries.size(), 4u);
  EXPECT_FALSE(has(inv->control_devices, "/dev/nvidia-modeset"));
  EXPECT_TRUE(has(inv->control_devices, "/dev/nvidiactl"));
}

TEST(DriverDiscovery, DriverContainerDevicesComeFromTheDriverRoot) {
  FakeDriverRoot fake(FakeDriverOptions{.driver_container = true});
  auto roots = fake.roots();
  roots.driver_root = "/run/nvidia/driver";  // the host path; the agent reads container_driver_root
  auto inv = discover_driver(roots);
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  EXPECT_EQ(inv->dev_root, "/run/nvidia/driver");
  EXPECT_EQ(inv->control_devices.size(), 4u);
}

TEST(DriverDiscovery, DriverRootWithoutARealDevDirectoryTakesNodesFromTheHost) {
  FakeDriverRoot fake;
  std::filesystem::create_symlink("/dev", fake.driver_root() + "/dev");  // a link, not the root's own dev/
  auto roots = fake.roots();
  roots.driver_root = "/run/nvidia/driver";
  auto inv = discover_driver(roots);
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  EXPECT_EQ(inv->dev_root, "/");
}

TEST(DriverDiscovery, ABinaryThatCannotRunIsNotInjected) {
  FakeDriverRoot fake;
  std::filesystem::permissions(fake.driver_root() + "/usr/bin/nvidia-debugdump", std::filesystem::perms::owner_read);
  auto inv = discover_driver(fake.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().describe();
  for (const auto& b : inv->binaries) EXPECT_NE(b.path, "/usr/bin/nvidia-debugdump");
  EXPECT_EQ(inv->binaries.size(), 4u);
}

TEST(DriverDiscovery, LibcudaOfAnotherVersionThanNvmlsIsRefusedNamingBoth) {
  FakeDriverRoot fake;  // 580.95.05
  auto roots = fake.roots();
  roots.nvml_version = "570.148.08";
  auto inv = discover_driver(roots);
  ASSERT_FALSE(inv.ok());
  const auto& m = inv.error().message;
  EXPECT_EQ(m.rfind("failed to locate libcuda.so: libcuda.so.570.148.08: not found", 0), 0u) << "upstream's words: " << m;
  EXPECT_NE(m.find("NVML reports driver version 570.148.08"), std::string::npos) << m;
  EXPECT_NE(m.find("libcuda.so.580.95.05"), std::string::npos) << m;
  roots.nvml_version = "580.95.05";
  EXPECT_TRUE(discover_driver(roots).ok());
}

TEST(CdiHook, ConfiguredPathWinsThenHostThenOperatorToolkitThenDriverRoot) {
  FakeDriverRoot fake;
  auto roots = fake.roots();
  roots.driver_root = "/run/nvidia/driver";
  EXPECT_EQ(resolve_cdi_hook(roots, "/opt/hook"), "/opt/hook");
  EXPECT_EQ(resolve_cdi_hook(roots, ""), "") << "none anywhere";
  auto exe = [](const std::string& path) {
    testing::write_file(path, "#!/bin/sh\n");
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  };
  testing::write_file(fake.host_root() + "/usr/bin/nvidia-cdi-hook", "not executable");
  EXPECT_EQ(resolve_cdi_hook(roots, ""), "") << "a file that cannot run is no hook";
  exe(fake.driver_root() + "/usr/bin/nvidia-cdi-hook");
  EXPECT_EQ(resolve_cdi_hook(roots, ""), "/run/nvidia/driver/usr/bin/nvidia-cdi-hook") << "host path of the root's";
  exe(fake.host_root() + "/usr/local/nvidia/toolkit/nvidia-cdi-hook");
  EXPECT_EQ(resolve_cdi_hook(roots, ""), "/usr/local/nvidia/toolkit/nvidia-cdi-hook");
  exe(fake.host_root() + "/usr/bin/nvidia-cdi-hook");
  EXPECT_EQ(resolve_cdi_hook(roots, ""), "/usr/bin/nvidia-cdi-hook");
}

TEST(DriverDiscovery, CachedUntilTheDriverVersionChanges) {
  FakeDriverRoot fake;
  DriverDiscovery discovery(fake.roots());
  auto first = discovery.current();
  ASSERT_TRUE(first.ok());
  auto again = discovery.current();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get()) << "same driver: the cached inventory";
  fake.upgrade("590.10.01");
  auto upgraded = discovery.current();
  ASSERT_TRUE(upgraded.ok()) << upgraded.error().describe();
  EXPECT_EQ((*upgraded)->version, "590.10.01");
  EXPECT_TRUE(has((*upgraded)->libraries, fake.lib_dir() + "/libcuda.so.590.10.01"));
  EXPECT_FALSE(has((*upgraded)->libraries, fake.lib_dir() + "/libcuda.so.580.95.05"));
  EXPECT_EQ((*upgraded)->firmware, std::vector<std::string>{"/lib/firmware/nvidia/590.10.01/gsp_ga10x.bin"});
  std::filesystem::remove(fake.driver_root() + fake.lib_dir() + "/libcuda.so.1");
  auto gone = discovery.current();
  ASSERT_FALSE(gone.ok()) << "driver uninstalled: no stale inventory";
  EXPECT_NE(gone.error().message.find("libcuda.so.1"), std::string::npos);
}

}  // namespace
}  // namespace nvdra::cdi
