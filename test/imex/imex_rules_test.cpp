// imex/: channel major discovery, the published channel-0 device, the seed's prepare rules and
// the unit policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "imex/channel_device.hpp"
#include "imex/channel_major.hpp"
#include "imex/prepare_rules.hpp"
#include "imex/unit_policy.hpp"

namespace nvdra::imex {
namespace {

constexpr const char* kProcDevices =
    "Character devices:\n  1 mem\n195 nvidia\n234 nvidia-caps-imex-channels\n235 nvidia-caps\n\n"
    "Block devices:\n  8 sd\n240 nvidia-caps-imex-channels\n";

TEST(ChannelMajor, ParsesTheCharacterDeviceLine) {
  auto major = parse_channel_major(kProcDevices, "/proc/devices");
  ASSERT_TRUE(major) << major.error().describe();
  EXPECT_EQ(*major, 234);
}

TEST(ChannelMajor, IgnoresBlockDevicesAndPrefixes) {
  auto major = parse_channel_major("Character devices:\n235 nvidia-caps\nBlock devices:\n240 nvidia-caps-imex-channels\n",
                                   "/x/proc/devices");
  ASSERT_FALSE(major);
  EXPECT_EQ(major.error().code, ErrorCode::kNotFound);
  EXPECT_NE(major.error().message.find("/x/proc/devices has no character device nvidia-caps-imex-channels"),
            std::string::npos);
}

class HostRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("nvdra-imex-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "proc");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& text) { std::ofstream(root_ / "proc/devices") << text; }
  std::filesystem::path root_;
};

TEST_F(HostRoot, ReadsMajorUnderHostRoot) {
  write(kProcDevices);
  auto major = read_channel_major(root_.string());
  ASSERT_TRUE(major) << major.error().describe();
  EXPECT_EQ(*major, 234);
}

TEST_F(HostRoot, MissingEntrySaysWhatTheHostLacksAndHowToFixIt) {
  write("Character devices:\n195 nvidia\nBlock devices:\n");
  auto major = read_channel_major(root_.string());
  ASSERT_FALSE(major);
  EXPECT_EQ(major.error().code, ErrorCode::kFailedPrecondition);
  const auto& m = major.error().message;
  EXPECT_NE(m.find((root_ / "proc/devices").string() + " has no character device nvidia-caps-imex-channels"),
            std::string::npos) << m;
  EXPECT_NE(m.find("restart nvdra-agent"), std::string::npos) << m;
}

TEST_F(HostRoot, MissingFileIsAnErrorNamingIt) {
  std::filesystem::remove(root_ / "proc/devices");
  auto major = read_channel_major(root_.string());
  ASSERT_FALSE(major);
  EXPECT_NE(major.error().message.find("cannot read " + (root_ / "proc/devices").string()), std::string::npos);
}

TEST(ChannelDevice, IsChannelZeroWithTheSeedAttributes) {
  auto r = host_managed_resources();
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& d = r.devices[0];
  EXPECT_EQ(d.name, "channel-0");
  EXPECT_EQ(std::get<std::string>(d.attributes.at("type")), "channel");
  EXPECT_EQ(std::get<int64_t>(d.attributes.at("id")), 0);
  EXPECT_EQ(d.attributes.size(), 2u);
}

TEST(PrepareRules, AllocationModeAllowlist) {
  EXPECT_TRUE(check_allocation_mode(""));
  EXPECT_TRUE(check_allocation_mode("Single"));
  for (const char* bad : {"All", "foo", "single"}) {
    auto st = check_allocation_mode(bad);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().field, "allocationMode");
    EXPECT_NE(st.error().message.find(std::string("allocationMode \"") + bad + "\" is not supported"),
              std::string::npos);
    EXPECT_NE(st.error().message.find("permanent"), std::string::npos);
  }
}

TEST(PrepareRules, ExactlyOneResult) {
  EXPECT_TRUE(check_result_count(1));
  auto st = check_result_count(2);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("exactly one allocation result"), std::string::npos);
  EXPECT_NE(st.error().message.find("has 2"), std::string::npos);
}

TEST(PrepareRules, EmptyCliqueIsPermanentAndNamed) {
  EXPECT_TRUE(check_clique("c1a2.7"));
  auto st = check_clique("");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("host-managed IMEX requires an NVLink clique on this node; NVML reports none"),
            std::string::npos);
  EXPECT_NE(st.error().message.find("permanent"), std::string::npos);
}

TEST(PrepareRules, DaemonAndDriverManagedMessages) {
  EXPECT_NE(daemon_claim_error("x").message.find("daemon claims are disabled under HostManagedIMEX"),
            std::string::npos);
  EXPECT_NE(driver_managed_error().message.find("driver-managed IMEX is not provided by this process"),
            std::string::npos);
  EXPECT_NE(channel_conflict_error("u1").message.find("channel 0 already allocated by claim u1"), std::string::npos);
}

UnitView view(Reach reach, std::string active, std::string sub) {
  return UnitView{"nvidia-imex.service", reach, UnitState{"loaded", std::move(active), std::move(sub)}, {}};
}

TEST(UnitPolicy, OnlyEnforceRefuses) {
  auto stopped = view(Reach::kKnown, "inactive", "dead");
  EXPECT_TRUE(prepare_allowed(CheckPolicy::kWarn, stopped));
  EXPECT_TRUE(prepare_allowed(CheckPolicy::kOff, stopped));
  auto st = prepare_allowed(CheckPolicy::kEnforce, stopped);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("nvidia-imex.service must be active"), std::string::npos);
  EXPECT_NE(st.error().message.find("active=inactive sub=dead"), std::string::npos);
  EXPECT_TRUE(prepare_allowed(CheckPolicy::kEnforce, view(Reach::kKnown, "active", "running")));
  EXPECT_TRUE(prepare_allowed(CheckPolicy::kEnforce, view(Reach::kKnown, "reloading", "reload")));
}

TEST(UnitPolicy, EnforceFailsClosedWhenUnknown) {
  UnitView v{"nvidia-imex.service", Reach::kNoSystemd, {}, "org.freedesktop.systemd1 is not on the system bus"};
  auto st = prepare_allowed(CheckPolicy::kEnforce, v);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cannot be confirmed"), std::string::npos);
  EXPECT_NE(st.error().message.find("org.freedesktop.systemd1 is not on the system bus"), std::string::npos);
}

}  // namespace
}  // namespace nvdra::imex
