// Start-up handling of the loaded checkpoint (reference §6.4).
#include <gtest/gtest.h>

#include <fstream>

#include "agent/claims/checkpoint/checkpoint_startup.hpp"
#include "test/claims/temp_dir.hpp"

namespace nvdra::claims {
namespace {

Checkpoint with_claim(std::string boot_id) {
  Checkpoint cp;
  cp.node_boot_id = std::move(boot_id);
  cp.claims["u1"] = CheckpointedClaim{};
  cp.claims["u2"] = CheckpointedClaim{ClaimState::kPrepareCompleted};
  return cp;
}

TEST(CheckpointStartup, NoCheckpointCreatesAnEmptyOneWithTheBootId) {
  auto r = reconcile_boot_id(std::nullopt, "b1");
  EXPECT_EQ(r.check, BootCheck::kCreated);
  EXPECT_TRUE(r.needs_save);
  EXPECT_EQ(r.checkpoint.node_boot_id, "b1");
  EXPECT_TRUE(r.checkpoint.claims.empty());
}

TEST(CheckpointStartup, SameBootKeepsEveryClaim) {
  auto r = reconcile_boot_id(with_claim("b1"), "b1");
  EXPECT_EQ(r.check, BootCheck::kSameBoot);
  EXPECT_FALSE(r.needs_save);
  EXPECT_EQ(r.checkpoint.claims.size(), 2u);
}

TEST(CheckpointStartup, MissingBootIdIsAdoptedKeepingClaims) {
  auto r = reconcile_boot_id(with_claim(""), "b2");
  EXPECT_EQ(r.check, BootCheck::kAdoptedBootId);
  EXPECT_TRUE(r.needs_save);
  EXPECT_EQ(r.checkpoint.node_boot_id, "b2");
  EXPECT_EQ(r.checkpoint.claims.size(), 2u);
}

TEST(CheckpointStartup, RebootForgetsEveryClaim) {
  auto r = reconcile_boot_id(with_claim("b1"), "b2");
  EXPECT_EQ(r.check, BootCheck::kNewBoot);
  EXPECT_TRUE(r.needs_save);
  EXPECT_EQ(r.checkpoint.node_boot_id, "b2");
  EXPECT_TRUE(r.checkpoint.claims.empty());
}

TEST(CheckpointStartup, UnfinishedClaimsAreThoseStillPrepareStarted) {
  EXPECT_EQ(unfinished_claims(with_claim("b")), std::vector<std::string>{"u1"});
}

TEST(CheckpointStartup, BootIdIsReadTrimmed) {
  testing::TempDir tmp;
  const std::string path = tmp.path() + "/boot_id";
  std::ofstream(path) << "8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b\n";
  EXPECT_EQ(read_boot_id(path).value(), "8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b");
  EXPECT_FALSE(read_boot_id(tmp.path() + "/missing").ok());
  EXPECT_TRUE(read_boot_id().ok()) << "this kernel has a boot id";
}

}  // namespace
}  // namespace nvdra::claims
