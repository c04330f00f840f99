#include "agent/drivers/gone_claim_sweep.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace asio = boost::asio;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace nvdra::drivers {
namespace {

claims::CheckpointedClaim entry(claims::ClaimState state, std::string name) {
  claims::CheckpointedClaim c;
  c.state = state;
  c.name = std::move(name);
  c.ns = "default";
  return c;
}

// The API and kubelet's unprepare path, as the sweep sees them.
struct World {
  std::map<std::string, Result<bool>> api;  // by name: exists, or the read's error
  std::set<std::string> prepared;           // UIDs still PrepareCompleted
  std::set<std::string> unprepared_during_read;  // kubelet unprepares these while the sweep reads them
  std::map<std::string, std::string> unprepare_errors;  // by UID
  std::vector<std::string> reads, unprepares;

  GoneClaimSweep sweep() {
    return {[this](const kubelet::ClaimRef& c) { return prepared.count(c.uid) > 0; },
            [this](kubelet::ClaimRef c) -> asio::awaitable<Result<bool>> {
              reads.push_back(c.name);
              if (unprepared_during_read.count(c.uid)) prepared.erase(c.uid);
              co_return api.at(c.name);
            },
            [this](kubelet::ClaimRef c) -> asio::awaitable<std::string> {
              unprepares.push_back(c.uid);
              auto it = unprepare_errors.find(c.uid);
              if (it != unprepare_errors.end()) co_return it->second;
              prepared.erase(c.uid);
              co_return std::string();
            }};
  }

  GoneClaimReport run(std::vector<kubelet::ClaimRef> candidates) {
    asio::io_context io;
    GoneClaimReport out;
    auto with = sweep();
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { out = co_await sweep_gone_claims(candidates, with); },
                   asio::detached);
    io.run();
    return out;
  }
};

TEST(GoneClaimSweep, AsksAboutCompletedClaimsWithANameInUidOrder) {
  claims::Checkpoint cp;
  cp.claims["uid-c"] = entry(claims::ClaimState::kPrepareCompleted, "c");
  cp.claims["uid-a"] = entry(claims::ClaimState::kPrepareCompleted, "a");
  cp.claims["uid-b"] = entry(claims::ClaimState::kPrepareStarted, "b");  // start-up rolled it back already
  cp.claims["uid-d"] = entry(claims::ClaimState::kPrepareCompleted, "");  // an older plugin's entry
  std::vector<std::string> uids;
  for (const auto& c : gone_claim_candidates(cp)) uids.push_back(c.uid + " " + c.namespace_name + "/" + c.name);
  EXPECT_THAT(uids, ElementsAre("uid-a default/a", "uid-c default/c"));
}

TEST(GoneClaimSweep, UnpreparesOnlyClaimsTheApiNoLongerHas) {
  World w;
  w.api = {{"kept", true}, {"gone", false}, {"unknown", make_error(ErrorCode::kUnavailable, "connection refused")}};
  w.prepared = {"uid-kept", "uid-gone", "uid-unknown"};
  auto report = w.run({{"default", "gone", "uid-gone"}, {"default", "kept", "uid-kept"},
                       {"default", "unknown", "uid-unknown"}});
  EXPECT_THAT(w.reads, ElementsAre("gone", "kept", "unknown"));
  EXPECT_EQ(report.asked, 3u);
  EXPECT_THAT(w.unprepares, ElementsAre("uid-gone"));
  EXPECT_THAT(report.unprepared, ElementsAre("uid-gone"));
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_THAT(report.errors[0], HasSubstr("default/unknown"));
  EXPECT_THAT(report.errors[0], HasSubstr("connection refused"));
  EXPECT_THAT(report.errors[0], HasSubstr("kept prepared"));
  EXPECT_EQ(w.prepared, (std::set<std::string>{"uid-kept", "uid-unknown"}));
}

TEST(GoneClaimSweep, LeavesClaimsKubeletUnpreparedFirst) {
  World w;
  w.api = {{"early", false}, {"during", false}};
  w.prepared = {"uid-during"};  // kubelet unprepared "early" before the sweep came to it
  w.unprepared_during_read = {"uid-during"};  // and "during" while its read was on the way
  auto report = w.run({{"default", "early", "uid-early"}, {"default", "during", "uid-during"}});
  EXPECT_THAT(w.reads, ElementsAre("during"));
  EXPECT_EQ(report.asked, 1u);
  EXPECT_TRUE(w.unprepares.empty());
  EXPECT_TRUE(report.unprepared.empty());
  EXPECT_TRUE(report.errors.empty());
}

TEST(GoneClaimSweep, AFailedUnprepareIsReportedAndTheSweepGoesOn) {
  World w;
  w.api = {{"stuck", false}, {"gone", false}};
  w.prepared = {"uid-stuck", "uid-gone"};
  w.unprepare_errors = {{"uid-stuck", "MIG device busy"}};
  auto report = w.run({{"default", "stuck", "uid-stuck"}, {"default", "gone", "uid-gone"}});
  EXPECT_THAT(w.unprepares, ElementsAre("uid-stuck", "uid-gone"));
  EXPECT_THAT(report.unprepared, ElementsAre("uid-gone"));
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_THAT(report.errors[0], HasSubstr("default/stuck"));
  EXPECT_THAT(report.errors[0], HasSubstr("MIG device busy"));
}

}  // namespace
}  // namespace nvdra::drivers
