#include "nvml/mock/mig_layout.hpp"

#include <gtest/gtest.h>

namespace nvdra::nvml::mock {
namespace {

const ProductSpec& a100() { return *find_product("NVIDIA A100-SXM4-40GB"); }

TEST(MigLayout, SevenOneSliceInstancesFillTheGpuAndAnEighthIsRefused) {
  std::vector<GiRecord> gis;
  for (unsigned s = 0; s < 7; ++s) {
    ASSERT_EQ(check_gi_placement(a100(), gis, 19, s, nullptr), NVML_SUCCESS) << s;
    gis.push_back(GiRecord{next_gi_id(gis, *a100().profile_by_id(19)), 19, s, 1});
  }
  EXPECT_FALSE(first_free_gi_start(a100(), gis, 19).has_value());
  EXPECT_EQ(check_gi_placement(a100(), gis, 14, 0, nullptr), NVML_ERROR_INSUFFICIENT_RESOURCES);
}

TEST(MigLayout, FourAndThreeSliceInstancesShareTheGpuButOverlapIsInsufficientResources) {
  std::vector<GiRecord> gis{{1, 5, 0, 4}};
  EXPECT_EQ(check_gi_placement(a100(), gis, 9, 4, nullptr), NVML_SUCCESS);
  std::string why;
  EXPECT_EQ(check_gi_placement(a100(), gis, 9, 0, &why), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_NE(why.find("overlaps 4g.20gb"), std::string::npos) << why;
}

TEST(MigLayout, AStartOutsideThePossiblePlacementsIsInvalidArgument) {
  std::string why;
  EXPECT_EQ(check_gi_placement(a100(), {}, 9, 2, &why), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(why.find("allowed: 0, 4"), std::string::npos) << why;
  EXPECT_EQ(check_gi_placement(a100(), {}, 42, 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST(MigLayout, OnlyOneMediaExtensionInstanceMayExist) {
  std::vector<GiRecord> gis{{7, 20, 0, 1}};
  EXPECT_EQ(check_gi_placement(a100(), gis, 20, 1, nullptr), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(check_gi_placement(a100(), gis, 19, 1, nullptr), NVML_SUCCESS);
}

TEST(MigLayout, ComputeInstanceProfilesFollowTheUserGuide) {
  CiProfileSpec ci;
  const auto& g4 = *a100().profile_by_id(5);
  EXPECT_EQ(ci_profile(g4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, &ci), NVML_ERROR_NOT_SUPPORTED);  // no 3c in 4g
  ASSERT_EQ(ci_profile(g4, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, &ci), NVML_SUCCESS);
  EXPECT_EQ(ci.instance_count, 2u);
  EXPECT_EQ(ci.multiprocessors, 28u);
  ASSERT_EQ(ci_profile(g4, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, &ci), NVML_SUCCESS);
  EXPECT_EQ(ci.multiprocessors, 56u);
  EXPECT_EQ(ci_profile(g4, NVML_COMPUTE_INSTANCE_PROFILE_COUNT, &ci), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mig_profile_name(*a100().profile_by_id(9), 1), "1c.3g.20gb");
}

}  // namespace
}  // namespace nvdra::nvml::mock
