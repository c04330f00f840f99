#include "cdi/nvidia_caps.hpp"

#include <gtest/gtest.h>

#include "test/cdi/fake_driver_root.hpp"

namespace nvdra::cdi {
namespace {

TEST(NvidiaCaps, MajorComesFromTheCharacterSectionOnlyAndMatchesTheWholeName) {
  const char* text = "Character devices:\n195 nvidia\n234 nvidia-caps\n235 nvidia-caps-imex-channels\n\n"
                     "Block devices:\n9 nvidia-caps-block\n";
  EXPECT_EQ(*parse_char_device_major(text, "nvidia-caps"), 234);
  EXPECT_EQ(*parse_char_device_major(text, "nvidia-caps-imex-channels"), 235);
  EXPECT_FALSE(parse_char_device_major(text, "nvidia-caps-block").ok());
  auto missing = parse_char_device_major(text, "nvidia-uvm");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("\"nvidia-uvm\""), std::string::npos);
}

TEST(NvidiaCaps, AccessFileGivesMinorAndDecimalMode) {
  auto cap = parse_cap_access("DeviceFileMinor: 30\nDeviceFileMode: 292\nDeviceFileModify: 1\n", "f");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->minor, 30);
  EXPECT_EQ(cap->mode, 292u);
  auto bad = parse_cap_access("DeviceFileMode: 292\n", "/proc/x/access");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/proc/x/access"), std::string::npos);
}

TEST(NvidiaCaps, ReadsCapsFromTheHostRootAndFallsBackToMigMinors) {
  testing::FakeDriverRoot fake;
  auto gi = read_cap(fake.host_root(), mig_gi_cap(0, 1));
  ASSERT_TRUE(gi.ok()) << gi.error().describe();
  EXPECT_EQ(*gi, (CapNode{30, 292u}));
  auto ci = read_cap(fake.host_root(), mig_ci_cap(1, 2, 1));
  ASSERT_TRUE(ci.ok()) << ci.error().describe();
  EXPECT_EQ(*ci, (CapNode{149, std::nullopt}));
  EXPECT_EQ(*read_char_device_major(fake.host_root(), kImexChannelsDevice), 235);
}

TEST(NvidiaCaps, MissingCapNamesBothPlacesLookedIn) {
  testing::FakeDriverRoot fake;
  auto missing = read_cap(fake.host_root(), mig_gi_cap(0, 9));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("capabilities/gpu0/mig/gi9/access"), std::string::npos);
  EXPECT_NE(missing.error().message.find("mig-minors"), std::string::npos);
}

}  // namespace
}  // namespace nvdra::cdi
