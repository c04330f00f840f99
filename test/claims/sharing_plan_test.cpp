// Sharing plans from normalized configs (reference §4.1–4.2) and the quantity arithmetic behind
// MPS pinned-memory limits.
#include <gtest/gtest.h>

#include "agent/claims/config/config_quantity.hpp"
#include "agent/claims/sharing/sharing_plan.hpp"

namespace nvdra::claims {
namespace {

struct MibCase {
  const char* text;
  int64_t mib;
};

class QuantityToMib : public ::testing::TestWithParam<MibCase> {};

TEST_P(QuantityToMib, RoundsLikeUpstream) {
  auto q = parse_quantity(GetParam().text);
  ASSERT_TRUE(q.ok()) << q.error().message;
  auto mib = whole_mebibytes(*q);
  ASSERT_TRUE(mib.ok());
  EXPECT_EQ(*mib, GetParam().mib);
}

INSTANTIATE_TEST_SUITE_P(Values, QuantityToMib,
                         ::testing::Values(MibCase{"4Gi", 4096}, MibCase{"1Mi", 1}, MibCase{"1048575", 0},
                                           MibCase{"1048576", 1}, MibCase{"500M", 476}, MibCase{"1G", 953},
                                           MibCase{"0.5Gi", 512}, MibCase{"1.5e9", 1430}, MibCase{"2Ti", 2097152}, MibCase{".5Ki", 0}, MibCase{"+3Mi", 3},
                                           MibCase{"1048575.1", 1}, MibCase{"-1Mi", -1}, MibCase{"100m", 0}));

TEST(Quantity, MalformedTextIsRejectedWithUpstreamWording) {
  for (const char* bad : {"", "Gi", "1..2", "abc", "1 Gi", "1.2.3", "1KiB"}) {
    auto q = parse_quantity(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_NE(q.error().message.find("quantities must match the regular expression"), std::string::npos) << bad;
  }
  for (const char* bad : {"1Kii", "1iK", "1e", "1MM", "1e3Ki"}) {
    auto q = parse_quantity(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_NE(q.error().message.find("unable to parse quantity's suffix"), std::string::npos) << bad;
  }
}

TEST(Quantity, HugeValuesAreOutOfRangeNotWrapped) {
  auto q = parse_quantity("1e40");
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(whole_mebibytes(*q).ok());
}

MpsConfig limits(std::optional<std::string> dflt, std::map<std::string, std::string> per_device) {
  MpsConfig m;
  m.default_pinned_device_memory_limit = std::move(dflt);
  m.default_per_device_pinned_memory_limit = std::move(per_device);
  return m;
}

TEST(MpsPinnedLimits, DefaultAppliesToEveryUuidAndEntriesOverrideByUuidOrSortedIndex) {
  auto r = mps_pinned_limits(limits("4Gi", {{"GPU-b", "1Gi"}, {"0", "2Gi"}}), {"GPU-c", "GPU-a", "GPU-b"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::map<std::string, std::string>{{"GPU-a", "2048M"}, {"GPU-b", "1024M"}, {"GPU-c", "4096M"}}));
}

TEST(MpsPinnedLimits, ErrorsUseUpstreamWording) {
  struct Case {
    MpsConfig mps;
    const char* message;
  };
  const Case cases[] = {
      {limits("1Ki", {}), "invalid limit: default value set too low: 1Ki"},
      {limits(std::nullopt, {{"GPU-a", "0"}}), "invalid limit: value set too low: GPU-a: 0"},
      {limits(std::nullopt, {{"first", "1Gi"}}), "invalid device: unable to parse key as an integer: first"},
      {limits(std::nullopt, {{"5", "1Gi"}}), "invalid device: invalid device index: 5"},
  };
  for (const auto& c : cases) {
    auto r = mps_pinned_limits(c.mps, {"GPU-a", "GPU-b"});
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.error().message.rfind(c.message, 0), 0u) << r.error().message;
  }
}

TEST(SharingPlan, TimeSlicingMapsIntervalsToNvidiaSmiValues) {
  const std::pair<const char*, int> cases[] = {{"Default", 0}, {"Short", 1}, {"Medium", 2}, {"Long", 3}};
  for (const auto& [interval, value] : cases) {
    GpuConfig c{GpuSharing{"TimeSlicing", TimeSlicingConfig{interval}, std::nullopt}, std::nullopt};
    auto plan = plan_sharing(c, {"GPU-a"});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->kind, SharingKind::kTimeSlicing);
    EXPECT_EQ(plan->time_slice, value);
  }
}

TEST(SharingPlan, MixedStrategiesFailAtApplyTime) {
  GpuConfig ts{GpuSharing{"TimeSlicing", TimeSlicingConfig{"Short"}, MpsConfig{}}, std::nullopt};
  auto a = plan_sharing(ts, {"GPU-a"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, "cannot use MpsConfig with the 'TimeSlicing' strategy");
  GpuConfig mps{GpuSharing{"MPS", TimeSlicingConfig{"Short"}, MpsConfig{}}, std::nullopt};
  auto b = plan_sharing(mps, {"GPU-a"});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message, "cannot use TimeSlicingConfig with the 'MPS' strategy");
}

TEST(SharingPlan, MpsCarriesLimitsForTheGroup) {
  MpsConfig m = limits("1Gi", {});
  m.default_active_thread_percentage = 25;
  m.multi_user = true;
  auto plan = plan_sharing(MigDeviceConfig{MigSharing{"MPS", m}}, {"MIG-2", "MIG-1"});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kind, SharingKind::kMps);
  EXPECT_EQ(plan->mps.active_thread_percentage, 25);
  EXPECT_TRUE(plan->mps.multi_user);
  EXPECT_EQ(plan->mps.pinned_limits.size(), 2u);
}

TEST(SharingPlan, ExclusiveAndMigTimeSlicingDoNothing) {
  EXPECT_EQ(plan_sharing(GpuConfig{}, {"GPU-a"})->kind, SharingKind::kExclusive);
  EXPECT_EQ(plan_sharing(MigDeviceConfig{MigSharing{"TimeSlicing", std::nullopt}}, {"MIG-a"})->kind,
            SharingKind::kExclusive);
}

}  // namespace
}  // namespace nvdra::claims
