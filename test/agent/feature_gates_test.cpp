#include "agent/config/feature_gates.hpp"

#include <gtest/gtest.h>

namespace nvdra::config {
namespace {

TEST(FeatureGates, DefaultsMatchUpstream) {
  FeatureGates g;
  EXPECT_TRUE(g.enabled(gate::kIMEXDaemonsWithDNSNames));
  EXPECT_TRUE(g.enabled(gate::kComputeDomainCliques));
  EXPECT_TRUE(g.enabled(gate::kCrashOnNVLinkFabricErrors));
  EXPECT_FALSE(g.enabled(gate::kDynamicMIG));
  EXPECT_FALSE(g.enabled(gate::kHostManagedIMEX));
  EXPECT_FALSE(g.enabled(gate::kFabricTopologySupport));
  EXPECT_TRUE(g.enabled("ContextualLogging"));
}

TEST(FeatureGates, ParsesListWithTrailingCommaAndSpaces) {
  FeatureGates g;
  ASSERT_TRUE(g.set_from_string(" MPSSupport = true ,TimeSlicingSettings=T,"));
  EXPECT_TRUE(g.enabled(gate::kMPSSupport));
  EXPECT_TRUE(g.enabled(gate::kTimeSlicingSettings));
}

TEST(FeatureGates, UnknownGateIsNamed) {
  FeatureGates g;
  auto st = g.set_from_string("MPSSupport=true,NoSuchGate=true");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "unrecognized feature gate: NoSuchGate");
}

TEST(FeatureGates, MissingAndMalformedValuesAreNamed) {
  FeatureGates g;
  auto missing = g.set_from_string("DynamicMIG");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "missing bool value for DynamicMIG");
  auto bad = g.set_from_string("DynamicMIG=yes");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("invalid value of DynamicMIG=yes"), std::string::npos);
}

TEST(FeatureGates, AllAlphaEnablesAlphaGatesButExplicitSettingWins) {
  FeatureGates g;
  ASSERT_TRUE(g.set_from_string("AllAlpha=true,DynamicMIG=false"));
  EXPECT_TRUE(g.enabled(gate::kMPSSupport));
  EXPECT_FALSE(g.enabled(gate::kDynamicMIG));
  EXPECT_TRUE(g.enabled(gate::kComputeDomainCliques));  // beta: untouched by AllAlpha
}

TEST(FeatureGates, AllBetaFalseDisablesBetaGates) {
  FeatureGates g;
  ASSERT_TRUE(g.set_from_string("AllBeta=false"));
  EXPECT_FALSE(g.enabled(gate::kComputeDomainCliques));
  EXPECT_FALSE(g.enabled(gate::kIMEXDaemonsWithDNSNames));
  ASSERT_TRUE(g.resolve());
}

TEST(FeatureGates, HostManagedIMEXForcesBothGatesOffBeforeValidation) {
  FeatureGates g;
  ASSERT_TRUE(g.set_from_string("HostManagedIMEX=true,ComputeDomainCliques=true"));
  auto notes = g.resolve();
  ASSERT_TRUE(notes);
  ASSERT_EQ(notes->size(), 2u);
  EXPECT_EQ((*notes)[0], "HostManagedIMEX is enabled; forcing IMEXDaemonsWithDNSNames=false");
  EXPECT_EQ((*notes)[1], "HostManagedIMEX is enabled; forcing ComputeDomainCliques=false");
  EXPECT_FALSE(g.enabled(gate::kIMEXDaemonsWithDNSNames));
  EXPECT_FALSE(g.enabled(gate::kComputeDomainCliques));
}

TEST(FeatureGates, CliquesWithoutDnsNamesIsRejected) {
  FeatureGates g;
  ASSERT_TRUE(g.set_from_string("IMEXDaemonsWithDNSNames=false"));
  auto r = g.resolve();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "feature gate validation failed: feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames to "
            "also be enabled");
}

struct ExclusivePair {
  const char* spec;
  const char* message;
};

class MutualExclusion : public ::testing::TestWithParam<ExclusivePair> {};

TEST_P(MutualExclusion, IsRejectedWithUpstreamWording) {
  FeatureGates g;
  ASSERT_TRUE(g.set_from_string(GetParam().spec));
  auto r = g.resolve();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, std::string("feature gate validation failed: ") + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    UpstreamRules, MutualExclusion,
    ::testing::Values(
        ExclusivePair{"DynamicMIG=true,PassthroughSupport=true",
                      "feature gate DynamicMIG is currently mutually exclusive with PassthroughSupport"},
        ExclusivePair{"DynamicMIG=true,MPSSupport=true",
                      "feature gate DynamicMIG is currently mutually exclusive with MPSSupport"},
        ExclusivePair{"PassthroughSupport=true,NVMLDeviceHealthCheck=true",
                      "feature gate PassthroughSupport is currently mutually exclusive with NVMLDeviceHealthCheck"},
        ExclusivePair{"DeviceMetadata=true",
                      "feature gate DeviceMetadata requires PassthroughSupport to also be enabled"}));

}  // namespace
}  // namespace nvdra::config
