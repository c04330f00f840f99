// Steps with nothing to do off the loop thread stay on it: the sharing steps (time-slice,
// compute-mode, MPS) of a claim that does not share that way, and the device edits of full GPUs whose
// edits are kept (GpuEditsCache). Each trip to the worker pool is two thread switches; a burst of 64
// prepares made ~600 of them a round.
#include <boost/asio/post.hpp>

#include <future>

#include "agent/claims/steps/gpu_step_list.hpp"
#include "test/claims/pipeline_fixture.hpp"

namespace nvdra::claims::testing {
namespace {

class LoopStepsTest : public PipelineTest {
 protected:
  // The steps' node, with a pool whose one thread is held until release() (a trip there would wait).
  void SetUp() override {
    PipelineTest::SetUp();
    asio::post(held_.executor(), [gate = gate_] { gate.wait(); });
    edits_ = std::make_shared<const cdi::ContainerEdits>(cdi::ContainerEdits{.env = {"NVIDIA_VISIBLE_DEVICES=void"}});
    services_ = std::make_unique<GpuServices>(GpuServices{held_, *inventory_, *committer_, specs_, mps_, smi_, shares_,
                                                          nullptr, nullptr, nullptr, node_, mps_root_, host_, edits_,
                                                          on_rewritten_, gpu_edits_});
  }
  void TearDown() override {
    release_.set_value();
    PipelineTest::TearDown();
  }

  GpuPrepare prepare_of(SharingKind kind) {
    PlannedGroup group;
    group.plan.kind = kind;
    groups_ = {group};
    GpuPrepare c{*services_, kubelet::ClaimRef{"default", "plain", "uid-plain"}, "gpu"};
    c.groups = &groups_;
    c.prepared.resize(1);
    c.daemons.resize(1);
    c.undo.resize(1);
    return c;
  }

  std::promise<void> release_;
  std::shared_future<void> gate_ = release_.get_future().share();
  runtime::WorkerPool held_{1};
  NvidiaSmi smi_{"/nonexistent"};
  ShareStep shares_{false, {}, [](const std::string&) -> std::optional<DeviceType> { return std::nullopt; }};
  std::string node_ = "node-a", mps_root_ = "/nonexistent";
  cdi::HostView host_{"/", "/"};
  cdi::SharedEdits edits_;
  std::function<void(const kubelet::ClaimRef&, const std::string&)> on_rewritten_;
  GpuEditsCache gpu_edits_;
  std::vector<PlannedGroup> groups_;
  std::unique_ptr<GpuServices> services_;
};

TEST_F(LoopStepsTest, AClaimWithoutSharingNeverWaitsForThePool) {
  for (auto* step : {&time_slice_step(), &compute_mode_step(), &mps_daemon_step()}) {
    auto c = prepare_of(SharingKind::kExclusive);
    EXPECT_TRUE(run(step->apply(c))) << step->name();
    EXPECT_TRUE(run(step->undo(c))) << step->name();
    EXPECT_FALSE(c.prepared[0].time_slice_applied) << step->name();
    EXPECT_TRUE(c.prepared[0].mps_daemon_id.empty()) << step->name();
  }
  // Time-slicing is not MPS: its compute-mode and daemon steps stay on the loop too.
  for (auto* step : {&compute_mode_step(), &mps_daemon_step()}) {
    auto c = prepare_of(SharingKind::kTimeSlicing);
    EXPECT_TRUE(run(step->apply(c))) << step->name();
  }
  EXPECT_TRUE(mps_.started.empty());
}

TEST_F(LoopStepsTest, AFullGpuWhoseEditsAreKeptGetsThemWithoutThePool) {
  const auto* gpu = inventory_->find("gpu-0");
  ASSERT_TRUE(gpu != nullptr && gpu->type == DeviceType::kGpu);
  gpu_edits_.read(cdi::GpuDevice{gpu->minor, gpu->pci_bus_id}, host_);  // as an earlier prepare's pool job did
  auto c = prepare_of(SharingKind::kExclusive);
  groups_[0].devices = {gpu};
  ASSERT_TRUE(run(device_edits_step().apply(c)));
  ASSERT_EQ(c.edits.size(), 1u);
  EXPECT_EQ(c.edits[0].name, "gpu-0");
  ASSERT_FALSE(c.edits[0].edits.device_nodes.empty());
  EXPECT_EQ(c.edits[0].edits.device_nodes[0].path, "/dev/nvidia" + std::to_string(gpu->minor));
  EXPECT_EQ(c.claim_edits, edits_) << "the driver's common edits at spec level, shared, not copied";
}

}  // namespace
}  // namespace nvdra::claims::testing
