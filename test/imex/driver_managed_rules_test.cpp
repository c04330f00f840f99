// imex/driver_managed and the driver-managed devices: IMEXDaemonsWithDNSNames' driver floor (k8s
// version.ParseGeneric ordering), the IMEX daemon config template, upstream's error wording, daemon-0.
#include <gtest/gtest.h>

#include "imex/channel_device.hpp"
#include "imex/driver_managed.hpp"

namespace nvdra::imex {
namespace {

TEST(DriverManagedRules, DnsNamesNeedsDriver570_158_01OrNewer) {
  EXPECT_TRUE(check_dns_names_driver("570.158.01"));
  EXPECT_TRUE(check_dns_names_driver("570.158.2"));
  EXPECT_TRUE(check_dns_names_driver("580.105.08"));
  EXPECT_TRUE(check_dns_names_driver("571.0"));
  EXPECT_TRUE(check_dns_names_driver("v575.10.0-rc1"));
  auto old = check_dns_names_driver("570.148.08");
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().message,
            "driver version validation failed: IMEXDaemonsWithDNSNames feature requires GPU driver version >= "
            "570.158.01, but found 570.148.08");
  EXPECT_FALSE(check_dns_names_driver("570.158.0"));
  EXPECT_FALSE(check_dns_names_driver("565.200.99"));
  auto bad = check_dns_names_driver("unknown");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("invalid driver version format 'unknown'"), std::string::npos);
  EXPECT_FALSE(check_dns_names_driver("570"));
  EXPECT_FALSE(check_dns_names_driver(""));
}

TEST(DriverManagedRules, TemplateHoldsUpstreamsKeysInOrder) {
  const auto t = daemon_config_template();
  EXPECT_EQ(t.rfind("LOG_LEVEL=4\n", 0), 0u);
  EXPECT_NE(t.find("\nIMEX_NODE_CONFIG_FILE={{ .IMEXDaemonNodesConfigPath }}\n"), std::string::npos);
  EXPECT_NE(t.find("\nIMEX_CMD_BIND_INTERFACE_IP={{ .IMEXCmdBindInterfaceIP }}\n"), std::string::npos);
  EXPECT_LT(t.find("SERVER_PORT=50000"), t.find("IMEX_CMD_PORT=50005"));
  EXPECT_EQ(t.substr(t.size() - 38), "\nIMEX_NODE_DISCONNECTED_GRACE_TIME=-1\n");
  std::size_t lines = 0;
  for (char c : t) lines += c == '\n';
  EXPECT_EQ(lines, 33u);
}

TEST(DriverManagedRules, UpstreamsWords) {
  EXPECT_NE(label_conflict_error("a", "b").message.find("label already exists for a different ComputeDomain"),
            std::string::npos);
  EXPECT_EQ(not_ready_error("x").message.rfind("current node not ready in ComputeDomain: x", 0), 0u);
}

TEST(DriverManagedRules, DaemonDeviceBesideChannel) {
  const auto r = driver_managed_resources();
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].name, "channel-0");
  EXPECT_EQ(r.devices[1].name, "daemon-0");
  EXPECT_EQ(std::get<std::string>(r.devices[1].attributes.at("type")), "daemon");
  EXPECT_EQ(std::get<int64_t>(r.devices[1].attributes.at("id")), 0);
  EXPECT_EQ(host_managed_resources().devices.size(), 1u);
}

}  // namespace
}  // namespace nvdra::imex
