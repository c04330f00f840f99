// Node-local device exclusivity (upstream's validateNoOverlappingPreparedDevices): which overlaps
// are refused, with upstream's message, and which Kubernetes allows (adminAccess, shares).
#include <gtest/gtest.h>

#include "agent/claims/claim/device_exclusivity.hpp"
#include "agent/claims/claim/prepared_claim.hpp"

namespace nvdra::claims {
namespace {

constexpr const char* kDriver = "gpu.nvidia.com";

AllocationResult result(std::string device, bool admin = false, std::string share = {}) {
  AllocationResult r{"gpu", kDriver, "node-a", std::move(device)};
  r.admin_access = admin;
  r.share_id = std::move(share);
  return r;
}

// A checkpoint holding `uid` with `results`, through the checkpoint's own status encoding.
Checkpoint holding(const std::string& uid, std::vector<AllocationResult> results,
                   ClaimState state = ClaimState::kPrepareCompleted) {
  ClaimAllocation a;
  a.uid = uid;
  a.results = std::move(results);
  Checkpoint cp;
  cp.claims[uid] = CheckpointedClaim{state, encode_claim_status(a), {}, "held", "default", {}};
  return cp;
}

TEST(DeviceExclusivity, DevicePreparedForAnotherClaimIsRefusedWithUpstreamsMessage) {
  auto st = check_device_exclusivity(holding("uid-a", {result("gpu-0")}), "uid-b", {result("gpu-0")}, kDriver);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(st.error().message, "requested device gpu-0 is already allocated to different claim uid-a");
}

TEST(DeviceExclusivity, AClaimInPrepareStartedHoldsItsDevicesToo) {
  // nvdra prepares claims concurrently: an in-flight prepare's devices are taken.
  auto cp = holding("uid-a", {result("gpu-0")}, ClaimState::kPrepareStarted);
  EXPECT_FALSE(check_device_exclusivity(cp, "uid-b", {result("gpu-0")}, kDriver));
}

TEST(DeviceExclusivity, TheSameClaimAndOtherDevicesPass) {
  auto cp = holding("uid-a", {result("gpu-0")});
  EXPECT_TRUE(check_device_exclusivity(cp, "uid-a", {result("gpu-0")}, kDriver));
  EXPECT_TRUE(check_device_exclusivity(cp, "uid-b", {result("gpu-1")}, kDriver));
}

TEST(DeviceExclusivity, AdminAccessOnEitherSideIsAllowed) {
  EXPECT_TRUE(check_device_exclusivity(holding("uid-a", {result("gpu-0", true)}), "uid-b", {result("gpu-0", true)},
                                       kDriver));
  EXPECT_TRUE(check_device_exclusivity(holding("uid-a", {result("gpu-0", true)}), "uid-b", {result("gpu-0")}, kDriver));
  EXPECT_TRUE(check_device_exclusivity(holding("uid-a", {result("gpu-0")}), "uid-b", {result("gpu-0", true)}, kDriver));
}

TEST(DeviceExclusivity, SharesOnBothSidesAreAllowedAShareAgainstAWholeDeviceIsNot) {
  EXPECT_TRUE(check_device_exclusivity(holding("uid-a", {result("gpu-0", false, "s1")}), "uid-b",
                                       {result("gpu-0", false, "s2")}, kDriver));
  auto st = check_device_exclusivity(holding("uid-a", {result("gpu-0")}), "uid-b", {result("gpu-0", false, "s2")},
                                     kDriver);
  EXPECT_FALSE(st);
}

TEST(DeviceExclusivity, OtherDriversResultsAreNotThisDriversBusiness) {
  AllocationResult other{"nic", "nic.example.com", "node-a", "gpu-0"};
  EXPECT_TRUE(check_device_exclusivity(holding("uid-a", {result("gpu-0")}), "uid-b", {other}, kDriver));
}

TEST(DeviceExclusivity, AdminAccessAndShareIdSurviveTheCheckpointRoundTrip) {
  ClaimAllocation a;
  a.uid = "u";
  a.results = {result("gpu-0", true), result("gpu-1", false, "s1"), result("gpu-2")};
  auto back = decode_claim_status(encode_claim_status(a), "u");
  ASSERT_TRUE(back);
  ASSERT_EQ(back->results.size(), 3u);
  EXPECT_TRUE(back->results[0].admin_access);
  EXPECT_EQ(back->results[1].share_id, "s1");
  EXPECT_FALSE(back->results[2].admin_access);
  EXPECT_TRUE(back->results[2].share_id.empty());
}

}  // namespace
}  // namespace nvdra::claims
