// GpuClaimHandler prepare/unprepare against the dgx-a100 mock, memory stores and a fake claim source.
#include <gmock/gmock.h>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "cdi/spec_builder.hpp"
#include "test/claims/pipeline_fixture.hpp"

namespace nvdra::claims::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;


std::string first_mig(const GpuInventory& inv) {
  for (const auto& n : inv.names())
    if (n.find("-mig-") != std::string::npos) return n;
  return {};
}

TEST_F(PipelineTest, OneClaimOneGpuAnswersOneClaimScopedCdiIdAndRecordsCompletion) {
  auto claim = add_claim("one", "uid-1", {"gpu-0"});
  auto devices = prepare(claim);
  ASSERT_TRUE(devices) << devices.error().describe();
  ASSERT_EQ(devices->size(), 1u);
  const auto& d = (*devices)[0];
  EXPECT_EQ(d.request_names, std::vector<std::string>{"gpu"});
  EXPECT_EQ(d.pool_name, "node-a");
  EXPECT_EQ(d.device_name, "gpu-0");
  EXPECT_THAT(d.cdi_device_ids, ElementsAre("k8s.gpu.nvidia.com/claim=uid-1-gpu-0")) << "as upstream: no node-wide id";
  auto files = specs_.files();
  ASSERT_TRUE(files.count(spec_file("uid-1")));
  EXPECT_THAT(files[spec_file("uid-1")], HasSubstr("/dev/nvidia0"));
  // The handler's common edits at spec level, where upstream puts the driver's edits.
  EXPECT_THAT(files[spec_file("uid-1")], HasSubstr("\"containerEdits\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"]}}"));
  ASSERT_TRUE(committer_->durable().claims.count("uid-1"));
  EXPECT_EQ(committer_->durable().claims.at("uid-1").state, ClaimState::kPrepareCompleted);

  ASSERT_TRUE(unprepare(claim));
  EXPECT_FALSE(specs_.files().count(spec_file("uid-1")));
  EXPECT_FALSE(committer_->durable().claims.count("uid-1"));
}

TEST_F(PipelineTest, TwoClaimsEachGetTheirOwnDevicesAndSpecFiles) {
  auto a = add_claim("a", "uid-a", {"gpu-1"});
  auto b = add_claim("b", "uid-b", {"gpu-2", "gpu-3"});
  auto pa = prepare(a);
  auto pb = prepare(b);
  ASSERT_TRUE(pa && pb);
  EXPECT_EQ(pa->size(), 1u);
  ASSERT_EQ(pb->size(), 2u);
  EXPECT_EQ((*pb)[1].cdi_device_ids, std::vector<std::string>{"k8s.gpu.nvidia.com/claim=uid-b-gpu-3"});
  EXPECT_TRUE(specs_.files().count(spec_file("uid-a")));
  EXPECT_TRUE(specs_.files().count(spec_file("uid-b")));
  EXPECT_EQ(committer_->durable().claims.size(), 2u);
}

TEST_F(PipelineTest, StaticMigDeviceGetsItsParentAndCapDeviceNodes) {
  std::string mig = first_mig(*inventory_);
  ASSERT_FALSE(mig.empty()) << "dgx-a100 publishes static MIG devices";
  auto claim = add_claim("mig", "uid-mig", {mig});
  auto devices = prepare(claim);
  ASSERT_TRUE(devices) << devices.error().describe();
  EXPECT_EQ((*devices)[0].device_name, mig);
  const auto* d = inventory_->find(mig);
  auto content = specs_.files()[spec_file("uid-mig")];
  EXPECT_THAT(content, HasSubstr("/dev/nvidia" + std::to_string(d->parent_minor) + "\""));
  EXPECT_THAT(content, HasSubstr("/dev/nvidia-caps/nvidia-cap"));
}

TEST_F(PipelineTest, UnknownConfigFieldFailsThatClaimNamingFieldAndLeavesNothing) {
  auto bad = add_claim("bad", "uid-bad", {"gpu-4"},
                       {ConfigEntry{"FromClaim", {}, OpaqueParameters{"gpu.nvidia.com", gpu_opaque(R"("colour":"red")")}}});
  auto good = add_claim("good", "uid-good", {"gpu-5"});
  auto result = prepare(bad);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error().describe(), HasSubstr("default/bad"));
  EXPECT_THAT(result.error().describe(), HasSubstr("colour"));
  EXPECT_TRUE(prepare(good));
  EXPECT_FALSE(specs_.files().count(spec_file("uid-bad")));
  EXPECT_FALSE(committer_->current().claims.count("uid-bad"));
}

TEST_F(PipelineTest, MissingClaimIsAnErrorForThatClaim) {
  auto result = prepare(kubelet::ClaimRef{"default", "ghost", "uid-ghost"});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(result.error().describe(), HasSubstr("default/ghost"));
}

TEST_F(PipelineTest, ClaimWhoseUidChangedIsRefused) {
  add_claim("moved", "uid-new", {"gpu-0"});
  auto result = prepare(kubelet::ClaimRef{"default", "moved", "uid-old"});
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error().message,
              HasSubstr("claim default/moved: UID mismatch: kubelet has uid-old, the API has uid-new"));
  EXPECT_TRUE(specs_.files().empty());
}

TEST_F(PipelineTest, PreparingTwiceAnswersTheSameWithoutSecondLookupOrWrite) {
  auto claim = add_claim("twice", "uid-2x", {"gpu-0"});
  auto first = prepare(claim);
  ASSERT_TRUE(first);
  auto batches = specs_.batches();
  auto lookups = source_.lookups;
  auto second = prepare(claim);
  ASSERT_TRUE(second);
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(specs_.batches(), batches);
  EXPECT_EQ(source_.lookups, lookups);
}

TEST_F(PipelineTest, ADevicePreparedForOneClaimIsRefusedToAnotherUntilItIsUnprepared) {
  auto a = add_claim("a", "uid-a", {"gpu-0"});
  auto b = add_claim("b", "uid-b", {"gpu-0"});
  ASSERT_TRUE(prepare(a));
  auto refused = prepare(b);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().describe(),
            "claim default/b (uid-b): requested device gpu-0 is already allocated to different claim uid-a");
  EXPECT_FALSE(committer_->current().claims.count("uid-b"));
  EXPECT_FALSE(specs_.files().count(spec_file("uid-b")));
  ASSERT_TRUE(unprepare(a));
  EXPECT_TRUE(prepare(b));
}

TEST_F(PipelineTest, TwoConcurrentPreparesOfOneDeviceLetExactlyOneThrough) {
  auto a = add_claim("a", "uid-a", {"gpu-0"});
  auto b = add_claim("b", "uid-b", {"gpu-0"});
  using namespace boost::asio::experimental::awaitable_operators;
  auto [ra, rb] = run(handler_->prepare(a) && handler_->prepare(b));
  EXPECT_NE(static_cast<bool>(ra), static_cast<bool>(rb));
  EXPECT_EQ(committer_->current().claims.size(), 1u);
}

TEST_F(PipelineTest, AdminAccessClaimsPrepareADeviceTogether) {
  auto a = add_claim("a", "uid-a", {"gpu-0"});
  auto b = add_claim("b", "uid-b", {"gpu-0"});
  for (auto* name : {"default/a", "default/b"}) source_.claims[name].results[0].admin_access = true;
  ASSERT_TRUE(prepare(a));
  ASSERT_TRUE(prepare(b));
  EXPECT_EQ(committer_->durable().claims.size(), 2u);
}

TEST_F(PipelineTest, UnprepareOfUnknownClaimSucceeds) {
  EXPECT_TRUE(unprepare(kubelet::ClaimRef{"default", "never", "uid-never"}));
}

TEST_F(PipelineTest, TimeSlicingRunsNvidiaSmiAndRestoresDefaultAtLastUnprepare) {
  auto claim = add_claim("ts", "uid-ts", {"gpu-1"},
                         {ConfigEntry{"FromClaim", {}, OpaqueParameters{"gpu.nvidia.com", gpu_opaque(
                             R"("sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}})")}}});
  ASSERT_TRUE(prepare(claim));
  const std::string uuid = inventory_->find("gpu-1")->uuid;
  EXPECT_EQ(smi_calls(), "-i " + uuid + " -c DEFAULT\ncompute-policy -i " + uuid + " --set-timeslice 3\n");
  ASSERT_TRUE(unprepare(claim));
  EXPECT_THAT(smi_calls(), HasSubstr("compute-policy -i " + uuid + " --set-timeslice 0\n"));
}

TEST_F(PipelineTest, FailingNvidiaSmiIsAClaimErrorWithItsStderrAndLeavesNoSpec) {
  write_file(tmp_.path() + "/smi-fails", "");
  auto claim = add_claim("tsbad", "uid-tsbad", {"gpu-1"},
                         {ConfigEntry{"FromClaim", {}, OpaqueParameters{"gpu.nvidia.com", gpu_opaque(
                             R"("sharing":{"strategy":"TimeSlicing"})")}}});
  auto result = prepare(claim);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error().describe(), HasSubstr("default/tsbad"));
  EXPECT_THAT(result.error().describe(), HasSubstr("GPU is busy"));
  EXPECT_FALSE(specs_.files().count(spec_file("uid-tsbad")));
}

TEST_F(PipelineTest, MpsStartsOneDaemonWithLimitsAndPointsTheWorkloadAtItsPipe) {
  auto claim = add_claim("mps", "uid-mps", {"gpu-2"},
                         {ConfigEntry{"FromClaim", {}, OpaqueParameters{"gpu.nvidia.com", gpu_opaque(
                             R"("sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"4Gi"}})")}}});
  ASSERT_TRUE(prepare(claim));
  ASSERT_EQ(mps_.started.size(), 1u);
  const auto& daemon = mps_.started[0];
  const std::string uuid = inventory_->find("gpu-2")->uuid;
  EXPECT_EQ(daemon.id, mps_daemon_id("uid-mps", {uuid}));
  EXPECT_EQ(daemon.plan.active_thread_percentage, 50);
  EXPECT_EQ(daemon.plan.pinned_limits.at(uuid), "4096M");
  auto content = specs_.files()[spec_file("uid-mps")];
  EXPECT_THAT(content, HasSubstr("CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"));
  EXPECT_THAT(content, HasSubstr(daemon.pipe_dir()));
  EXPECT_THAT(smi_calls(), HasSubstr("-i " + uuid + " -c EXCLUSIVE_PROCESS"));

  ASSERT_TRUE(unprepare(claim));
  EXPECT_THAT(mps_.stopped, ElementsAre(daemon.id));
  EXPECT_THAT(smi_calls(), HasSubstr("-i " + uuid + " -c DEFAULT"));
}

}  // namespace
}  // namespace nvdra::claims::testing
