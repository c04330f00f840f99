// CheckpointCommitter::stage — a PrepareStarted entry kept in memory only: seen by current() (the
// exclusivity checks), never written by itself nor by other claims' saves, replaced on disk by the
// claim's next commit, and kept in memory when another claim's save fails.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::claims {
namespace {

CheckpointedClaim entry(const std::string& uid, ClaimState state) {
  CheckpointedClaim c;
  c.state = state;
  c.name = "claim-" + uid;
  c.ns = "default";
  return c;
}

class StagedEntry : public ::testing::Test {
 protected:
  Status commit(const std::string& uid, std::optional<CheckpointedClaim> claim) {
    return nvdra::testing::run_awaitable(io, committer.commit_one(uid, std::move(claim)));
  }
  std::size_t on_disk(const std::string& uid) { return store.load()->checkpoint->claims.count(uid); }

  MemoryCheckpointStore store;
  boost::asio::io_context io;  // before the pool: work still finishing posts its completion here
  runtime::WorkerPool pool{1};
  CheckpointCommitter committer{io.get_executor(), pool, store, Checkpoint{}};
};

TEST_F(StagedEntry, IsInMemoryOnlyAndCostsNoSave) {
  committer.stage("a", entry("a", ClaimState::kPrepareStarted));
  EXPECT_EQ(committer.current().claims.at("a").state, ClaimState::kPrepareStarted);
  EXPECT_EQ(committer.writes(), 0u);
  EXPECT_EQ(store.stats().saves, 0u);
  EXPECT_EQ(committer.durable().claims.count("a"), 0u);
}

TEST_F(StagedEntry, OtherClaimsSavesLeaveItOut) {
  committer.stage("a", entry("a", ClaimState::kPrepareStarted));
  ASSERT_TRUE(commit("b", entry("b", ClaimState::kPrepareCompleted)));
  EXPECT_EQ(on_disk("a"), 0u);
  EXPECT_EQ(on_disk("b"), 1u);
  EXPECT_EQ(committer.current().claims.count("a"), 1u) << "still guards its devices";
}

TEST_F(StagedEntry, TheClaimsNextCommitWritesIt) {
  committer.stage("a", entry("a", ClaimState::kPrepareStarted));
  ASSERT_TRUE(commit("a", entry("a", ClaimState::kPrepareCompleted)));
  EXPECT_EQ(committer.writes(), 1u) << "one save for the whole prepare";
  EXPECT_EQ(store.load()->checkpoint->claims.at("a").state, ClaimState::kPrepareCompleted);
}

TEST_F(StagedEntry, AnotherClaimsFailedSaveKeepsIt) {
  committer.stage("a", entry("a", ClaimState::kPrepareStarted));
  store.fail_next_saves(1);
  ASSERT_FALSE(commit("b", entry("b", ClaimState::kPrepareCompleted)));
  EXPECT_EQ(committer.current().claims.count("b"), 0u) << "the failed update is dropped";
  ASSERT_EQ(committer.current().claims.count("a"), 1u) << "the staged one was in no save";
  ASSERT_TRUE(commit("a", entry("a", ClaimState::kPrepareCompleted)));
  EXPECT_EQ(on_disk("a"), 1u);
}

TEST_F(StagedEntry, AnEraseCommitEndsIt) {
  committer.stage("a", entry("a", ClaimState::kPrepareStarted));
  ASSERT_TRUE(commit("a", std::nullopt));
  store.fail_next_saves(1);
  ASSERT_FALSE(commit("b", entry("b", ClaimState::kPrepareCompleted)));
  EXPECT_EQ(committer.current().claims.count("a"), 0u) << "no longer staged: a failed save does not bring it back";
}

TEST_F(StagedEntry, PersistWritesItAsItIs) {
  committer.stage("a", entry("a", ClaimState::kPrepareStarted));
  ASSERT_TRUE(nvdra::testing::run_awaitable(io, committer.persist("a")));
  EXPECT_EQ(store.load()->checkpoint->claims.at("a").state, ClaimState::kPrepareStarted);
  const auto writes = committer.writes();
  ASSERT_TRUE(nvdra::testing::run_awaitable(io, committer.persist("a")));
  ASSERT_TRUE(nvdra::testing::run_awaitable(io, committer.persist("never-staged")));
  EXPECT_EQ(committer.writes(), writes) << "neither is staged any more";
}

}  // namespace
}  // namespace nvdra::claims
