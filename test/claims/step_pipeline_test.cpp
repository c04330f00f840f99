// The prepare pipeline (agent/claims/steps/step_pipeline.hpp) with test-only steps registered here,
// without touching the pipeline's code: a new side effect is one step type plus one line in the list.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <set>
#include <string>
#include <vector>

#include "agent/claims/steps/step_pipeline.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::claims::steps {
namespace {

// The per-claim state the test steps share: what happened, in order.
struct TestClaim {
  std::vector<std::string> log;
  std::string refuse;      // a step of this name refuses the claim in plan
  std::string fail_apply;  // a step of this name fails its apply
  std::string fail_undo;   // a step of this name fails its undo
  std::set<std::string> no_record;  // steps that leave nothing start-up needs the entry for
  bool started = false, completed = false;
};

// The test-only step: records each call; refuses, fails or fails to undo when the claim says so.
class RecordingStep final : public ClaimStep<TestClaim> {
 public:
  explicit RecordingStep(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Status plan(TestClaim& c) const override {
    c.log.push_back("plan " + name_);
    if (c.refuse == name_) return make_error(ErrorCode::kFailedPrecondition, name_ + " refuses the claim");
    return {};
  }
  boost::asio::awaitable<Status> apply(TestClaim& c) override {
    c.log.push_back("apply " + name_);
    if (c.fail_apply == name_) co_return make_error(ErrorCode::kInternal, name_ + " failed");
    co_return Status{};
  }
  boost::asio::awaitable<Status> undo(TestClaim& c) override {
    c.log.push_back("undo " + name_);
    if (c.fail_undo == name_) co_return make_error(ErrorCode::kUnavailable, name_ + " cannot be undone");
    co_return Status{};
  }
  boost::asio::awaitable<Status> recover(TestClaim& c) override {
    c.log.push_back("recover " + name_);
    co_return Status{};
  }
  bool needs_record(const TestClaim& c) const override { return !c.no_record.count(name_); }

 private:
  std::string name_;
};

// A step that does not say whether it needs the record (the interface's default).
class SilentStep final : public ClaimStep<TestClaim> {
 public:
  std::string_view name() const override { return "silent"; }
  Status plan(TestClaim&) const override { return {}; }
  boost::asio::awaitable<Status> apply(TestClaim&) override { co_return Status{}; }
  boost::asio::awaitable<Status> undo(TestClaim&) override { co_return Status{}; }
  boost::asio::awaitable<Status> recover(TestClaim&) override { co_return Status{}; }
};

class StepPipelineTest : public ::testing::Test {
 protected:
  Status run(TestClaim& claim) {
    PipelineHooks<TestClaim> hooks;
    hooks.started = [](TestClaim& c, bool durable) -> boost::asio::awaitable<Status> {
      c.log.push_back(durable ? "commit PrepareStarted" : "stage PrepareStarted"), c.started = true;
      co_return Status{};
    };
    hooks.completed = [](TestClaim& c) -> boost::asio::awaitable<Status> {
      c.log.push_back("commit PrepareCompleted"), c.completed = true;
      co_return Status{};
    };
    hooks.on_rollback_failed = [this](TestClaim&, const Error& e) { rollback_errors.push_back(e.message); };
    return nvdra::testing::run_awaitable(io, run_pipeline(steps, claim, hooks));
  }

  boost::asio::io_context io;
  RecordingStep a{"a"}, b{"b"}, c{"c"};
  StepList<TestClaim> steps{&a, &b, &c};  // the one line per step
  std::vector<std::string> rollback_errors;
};

using Log = std::vector<std::string>;

TEST_F(StepPipelineTest, PlansEveryStepThenCommitsThenAppliesInOrder) {
  TestClaim claim;
  ASSERT_TRUE(run(claim));
  EXPECT_EQ(claim.log, (Log{"plan a", "plan b", "plan c", "commit PrepareStarted", "apply a", "apply b", "apply c",
                            "commit PrepareCompleted"}));
}

TEST_F(StepPipelineTest, ARefusingPlanRecordsNothingAndAppliesNothing) {
  TestClaim claim;
  claim.refuse = "b";
  auto st = run(claim);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "b refuses the claim");
  EXPECT_FALSE(claim.started);
  EXPECT_EQ(claim.log, (Log{"plan a", "plan b"}));
}

TEST_F(StepPipelineTest, AFailedApplyUndoesTheAppliedStepsInReverse) {
  TestClaim claim;
  claim.fail_apply = "c";
  auto st = run(claim);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "c failed");  // the apply's error is the answer
  EXPECT_FALSE(claim.completed);
  EXPECT_EQ(claim.log, (Log{"plan a", "plan b", "plan c", "commit PrepareStarted", "apply a", "apply b", "apply c",
                            "undo c", "undo b", "undo a"}));
  EXPECT_TRUE(rollback_errors.empty());
}

TEST_F(StepPipelineTest, AFailedUndoIsToldAndTheOthersAreStillUndone) {
  TestClaim claim;
  claim.fail_apply = "b";
  claim.fail_undo = "b";
  auto st = run(claim);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "b failed");
  EXPECT_EQ(claim.log, (Log{"plan a", "plan b", "plan c", "commit PrepareStarted", "apply a", "apply b", "undo b",
                            "undo a"}));
  EXPECT_EQ(rollback_errors, (Log{"b cannot be undone"}));
}

TEST_F(StepPipelineTest, ANewStepIsOneMoreLineInTheList) {
  RecordingStep d{"d"};
  steps.push_back(&d);
  TestClaim claim;
  claim.fail_apply = "d";
  ASSERT_FALSE(run(claim));
  EXPECT_EQ(claim.log, (Log{"plan a", "plan b", "plan c", "plan d", "commit PrepareStarted", "apply a", "apply b",
                            "apply c", "apply d", "undo d", "undo c", "undo b", "undo a"}));
}

TEST_F(StepPipelineTest, PrepareStartedStaysInMemoryWhenNoStepNeedsTheRecord) {
  TestClaim claim;
  claim.no_record = {"a", "b", "c"};
  ASSERT_TRUE(run(claim));
  EXPECT_EQ(claim.log, (Log{"plan a", "plan b", "plan c", "stage PrepareStarted", "apply a", "apply b", "apply c",
                            "commit PrepareCompleted"}));
}

TEST_F(StepPipelineTest, OneStepThatNeedsTheRecordMakesItDurable) {
  TestClaim claim;
  claim.no_record = {"a", "c"};
  ASSERT_TRUE(run(claim));
  EXPECT_EQ(claim.log[3], "commit PrepareStarted");
}

TEST_F(StepPipelineTest, AStepThatDoesNotSayNeedsTheRecord) {
  SilentStep silent;
  steps.push_back(&silent);
  TestClaim claim;
  claim.no_record = {"a", "b", "c"};
  ASSERT_TRUE(run(claim));
  EXPECT_EQ(claim.log[3], "commit PrepareStarted");
}

TEST_F(StepPipelineTest, RecoveryWalksTheSameListInOrder) {
  TestClaim claim;
  ASSERT_TRUE(nvdra::testing::run_awaitable(io, recover_steps(steps, claim)));
  EXPECT_EQ(claim.log, (Log{"recover a", "recover b", "recover c"}));
}

}  // namespace
}  // namespace nvdra::claims::steps
