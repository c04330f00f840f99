// GpuClaimHandler::recover: start-up after a crash or while the agent was down.
#include <gmock/gmock.h>

#include "agent/claims/claim/prepared_claim.hpp"
#include "test/claims/pipeline_fixture.hpp"

namespace nvdra::claims::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(PipelineTest, RecoveryRollsBackAPrepareStartedClaimAndItsSideEffects) {
  // As if the agent died after writing the CDI spec and the time slice, before PrepareCompleted.
  auto claim = add_claim("crashed", "uid-crash", {"gpu-3"},
                         {ConfigEntry{"FromClaim", {}, OpaqueParameters{"gpu.nvidia.com", gpu_opaque(
                             R"("sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Short"}})")}}});
  CheckpointedClaim started{ClaimState::kPrepareStarted, encode_claim_status(source_.claims["default/crashed"]), {},
                            "crashed", "default", {}};
  ASSERT_TRUE(run(committer_->commit({ClaimUpdate{"uid-crash", started}})));
  ASSERT_TRUE(specs_.apply(std::vector<cdi::SpecChange>{cdi::SpecChange::write(spec_file("uid-crash"), "{}")}));

  auto report = run(handler_->recover());
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].describe();
  EXPECT_THAT(report.rolled_back, ElementsAre("uid-crash"));
  EXPECT_TRUE(specs_.files().empty());
  EXPECT_FALSE(committer_->durable().claims.count("uid-crash"));
  const std::string uuid = inventory_->find("gpu-3")->uuid;
  EXPECT_THAT(smi_calls(), HasSubstr("compute-policy -i " + uuid + " --set-timeslice 0"));
  // kubelet's retry then prepares it from scratch.
  EXPECT_TRUE(prepare(claim));
}

// Start-up asks the API nothing (a start with 1,000 claims was 1,000 reads before kubelet was served):
// a completed claim the API no longer has stays prepared until the agent's sweep reaches it once it
// serves (drivers/gone_claim_sweep.hpp); orphan specs go.
TEST_F(PipelineTest, RecoveryReadsNoClaimKeepsCompletedClaimsAndRemovesOrphanSpecs) {
  auto kept = add_claim("kept", "uid-kept", {"gpu-0"});
  auto gone = add_claim("gone", "uid-gone", {"gpu-1"});
  ASSERT_TRUE(prepare(kept));
  ASSERT_TRUE(prepare(gone));
  source_.claims.erase("default/gone");
  // A spec left by a claim the checkpoint never recorded (crash before PrepareStarted was durable).
  ASSERT_TRUE(specs_.apply(std::vector<cdi::SpecChange>{cdi::SpecChange::write(spec_file("uid-orphan"), "{}")}));

  // A restarted agent: a fresh handler over the same stores.
  handler_ = make_handler();
  const int lookups = source_.lookups;
  auto report = run(handler_->recover());
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].describe();
  EXPECT_EQ(source_.lookups, lookups);
  EXPECT_THAT(report.orphan_specs, ElementsAre(spec_file("uid-orphan")));
  auto files = specs_.files();
  EXPECT_EQ(files.size(), 2u);
  EXPECT_TRUE(files.count(spec_file("uid-kept")));
  EXPECT_TRUE(files.count(spec_file("uid-gone")));
  EXPECT_TRUE(committer_->durable().claims.count("uid-kept"));
  EXPECT_TRUE(committer_->durable().claims.count("uid-gone"));
  // Both still answer from the checkpoint and unprepare.
  EXPECT_TRUE(prepare(kept));
  EXPECT_TRUE(unprepare(kept));
  EXPECT_TRUE(unprepare(gone));
  EXPECT_TRUE(specs_.files().empty());
}

}  // namespace
}  // namespace nvdra::claims::testing
