#include "cdi/naming.hpp"

#include <gtest/gtest.h>

namespace nvdra::cdi {
namespace {

TEST(Naming, ClaimSpecFileFollowsTheTransientSpecConvention) {
  EXPECT_EQ(claim_spec_file(kGpuVendor, "3b1f-uid"), "k8s.gpu.nvidia.com-claim_3b1f-uid.yaml");
  EXPECT_EQ(transient_spec_name(kComputeDomainVendor, kDeviceClass, "a/b"), "k8s.compute-domain.nvidia.com-device_a_b");
}

TEST(Naming, DeviceIdsAreVendorClassAndClaimScopedName) {
  EXPECT_EQ(claim_device_name("3b1f", "gpu-0-mig-1g10gb-19-0"), "3b1f-gpu-0-mig-1g10gb-19-0");
  EXPECT_EQ(qualified_device_id(kGpuVendor, kClaimClass, "3b1f-gpu-0"), "k8s.gpu.nvidia.com/claim=3b1f-gpu-0");
}

TEST(Naming, ValidatesCdiNamesAndSaysWhatIsAllowed) {
  EXPECT_TRUE(validate_vendor(kGpuVendor).ok());
  EXPECT_TRUE(validate_vendor(kComputeDomainVendor).ok());
  EXPECT_FALSE(validate_vendor("bad..vendor").ok());
  EXPECT_FALSE(validate_vendor("-bad").ok());
  EXPECT_TRUE(validate_class("claim").ok());
  EXPECT_FALSE(validate_class("a/b").ok());
  EXPECT_TRUE(validate_device_name("3b1f-gpu-0").ok());
  auto bad = validate_device_name("gpu 0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("\"gpu 0\""), std::string::npos);
  EXPECT_NE(bad.error().message.find("starting and ending alphanumeric"), std::string::npos);
  EXPECT_FALSE(validate_device_name("gpu-").ok());
  EXPECT_FALSE(validate_device_name("").ok());
}

}  // namespace
}  // namespace nvdra::cdi
