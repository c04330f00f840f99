#include "nvml/upstream_names.hpp"

#include <gtest/gtest.h>

#include "nvml/mock/product_catalog.hpp"

namespace nvdra::nvml {
namespace {

TEST(UpstreamNames, MigProfileStringsComputedFromMemoryMatchTheRealNamesOfEveryCatalogProduct) {
  for (const auto& name : mock::product_names()) {
    const auto* product = mock::find_product(name);
    for (const auto& p : product->gi_profiles) {
      EXPECT_EQ(mig_profile_string(p.index, p.slice_count, p.slice_count, p.memory_mib, product->memory_mib << 20), p.name)
          << name;
    }
  }
}

TEST(UpstreamNames, SmallerComputeInstancesGetTheCPrefix) {
  EXPECT_EQ(mig_profile_string(2, 3, 1, 19968, 40960ULL << 20), "1c.3g.20gb");
}

TEST(UpstreamNames, MigDeviceNamesFollowUpstreamExamples) {
  EXPECT_EQ(mig_name_component("1g.10gb"), "1g10gb");
  EXPECT_EQ(mig_name_component("1g.10gb+me"), "1g10gb-me");
  EXPECT_EQ(mig_name_component("1g.12gb+me.all"), "1g12gb-meall");
  EXPECT_EQ(mig_name_component("2g.48gb+gfx"), "2g48gb-gfx");
  EXPECT_EQ(mig_device_name(1, "2g.47gb", 14, 0), "gpu-1-mig-2g47gb-14-0");
  EXPECT_EQ(mig_device_name(0, "1g.5gb", 19, 0), "gpu-0-mig-1g5gb-19-0");
  EXPECT_EQ(gpu_device_name(3), "gpu-3");
}

TEST(UpstreamNames, VersionsAreCoercedLikeMastermindsSemver) {
  EXPECT_EQ(semver("570.158.01"), "570.158.1");
  EXPECT_EQ(semver("580.126.20"), "580.126.20");
  EXPECT_EQ(semver("8.0"), "8.0.0");
  EXPECT_EQ(semver(cuda_version(13000)), "13.0.0");
  EXPECT_EQ(semver(cuda_version(12080)), "12.8.0");
  EXPECT_EQ(semver("not-a-version"), "");
  EXPECT_EQ(semver("1..2"), "");
}

TEST(UpstreamNames, PciBusIdIsLowerCasedAndLosesTheUpperDomainDigits) {
  EXPECT_EQ(normalize_bus_id("00000000:B7:00.0"), "0000:b7:00.0");
  EXPECT_EQ(normalize_bus_id("00000008:01:00.0"), "0008:01:00.0");
}

TEST(UpstreamNames, QuantitiesUseTheLargestExactBinarySuffix) {
  EXPECT_EQ(binary_si(42949672960ULL), "40Gi");
  EXPECT_EQ(binary_si(4864ULL << 20), "4864Mi");
  EXPECT_EQ(binary_si(98), "98");
  EXPECT_EQ(binary_si(0), "0");
  EXPECT_EQ(binary_si(1536), "1536");
  EXPECT_EQ(binary_si(1024), "1Ki");
}

TEST(UpstreamNames, BrandAndArchitectureUseGoNvlibStrings) {
  EXPECT_EQ(brand_name(14), "Nvidia");
  EXPECT_EQ(brand_name(2), "Tesla");
  EXPECT_EQ(brand_name(99), "Unknown");
  EXPECT_EQ(architecture_name(8), "Ada Lovelace");
  EXPECT_EQ(architecture_name(10), "Blackwell");
  EXPECT_EQ(addressing_mode_name(2), "ATS");
}

}  // namespace
}  // namespace nvdra::nvml
