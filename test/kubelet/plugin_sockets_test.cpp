// Socket names, fixed and with a rolling-update UID (../shared/reference/kubelet-dra-protocol.md §3).
#include <gtest/gtest.h>

#include "agent/kubelet/plugin_sockets.hpp"

namespace nvdra::kubelet {
namespace {

TEST(PluginSockets, WithoutAUidTheNamesAreTheOnesKubeletDocuments) {
  const auto p = socket_paths("gpu.nvidia.com", "/var/lib/kubelet/plugins_registry",
                              "/var/lib/kubelet/plugins/gpu.nvidia.com", "");
  EXPECT_EQ(p.dra, "/var/lib/kubelet/plugins/gpu.nvidia.com/dra.sock");
  EXPECT_EQ(p.registration, "/var/lib/kubelet/plugins_registry/gpu.nvidia.com-reg.sock");
}

TEST(PluginSockets, ARollingUpdateUidMakesBothNamesUniquePerInstance) {
  const std::string uid = "0b5e4a2c-7d1f-4c8e-9a3b-2f6d8e1c4a7b";
  const auto p = socket_paths("gpu.nvidia.com", "/var/lib/kubelet/plugins_registry",
                              "/var/lib/kubelet/plugins/gpu.nvidia.com", uid);
  EXPECT_EQ(p.dra, "/var/lib/kubelet/plugins/gpu.nvidia.com/dra-" + uid + ".sock");
  EXPECT_EQ(p.registration, "/var/lib/kubelet/plugins_registry/gpu.nvidia.com-" + uid + "-reg.sock");
  const auto other = socket_paths("gpu.nvidia.com", "/var/lib/kubelet/plugins_registry",
                                  "/var/lib/kubelet/plugins/gpu.nvidia.com", "another-uid");
  EXPECT_NE(other.registration, p.registration);
  EXPECT_NE(other.dra, p.dra);
}

TEST(PluginSockets, ALongRegistrarDirFallsBackToAHashedNameThatFits) {
  const std::string uid = "0b5e4a2c-7d1f-4c8e-9a3b-2f6d8e1c4a7b";
  const std::string dir = "/" + std::string(40, 'r');
  const auto p = socket_paths("compute-domain.nvidia.com", dir, "/plugins/cd", uid);
  EXPECT_LE(p.registration.size(), kMaxSocketPath);
  EXPECT_EQ(p.registration.rfind(dir + "/compute-domain.nvidia.com-", 0), 0u) << p.registration;
  EXPECT_EQ(p.registration.find(uid), std::string::npos) << "the UID itself did not fit";
  // Deterministic: the same instance gets the same name after a restart.
  EXPECT_EQ(socket_paths("compute-domain.nvidia.com", dir, "/plugins/cd", uid).registration, p.registration);
}

TEST(PluginSockets, ARegistrarDirTooLongForAnyNameIsRejectedNamingTheFlag) {
  const std::string dir = "/" + std::string(100, 'r');
  try {
    (void)socket_paths("gpu.nvidia.com", dir, "/plugins/gpu", "");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--kubelet-registrar-directory-path"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdra::kubelet
