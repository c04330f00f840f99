// StatusReportingHandler: the D-Bus/nvdractl claim rows follow each prepare and unprepare, reading
// again only the claims those calls touched, and every row when the checkpoint changed besides.
#include "agent/drivers/status_reporting.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/status/agent_status.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::drivers {
namespace {

claims::CheckpointedClaim completed(const char* device) {
  claims::CheckpointedClaim c;
  c.state = claims::ClaimState::kPrepareCompleted;
  c.ns = "ns";
  c.name = device;
  c.prepared_devices = boost::json::parse(std::string(R"([{"devices":[{"gpu":{"info":{"DeviceName":")") + device +
                                          R"("}}}]}])")
                           .as_array();
  return c;
}

struct CheckpointWritingHandler : kubelet::ClaimHandler {
  claims::Checkpoint* cp = nullptr;
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef ref) override {
    cp->claims[ref.uid] = completed(ref.name.c_str());
    co_return std::vector<kubelet::PreparedDevice>{};
  }
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef ref) override {
    cp->claims.erase(ref.uid);
    co_return Status{};
  }
};

// (uid, devices) of the driver's rows, as nvdractl shows them.
std::vector<std::pair<std::string, std::vector<std::string>>> rows(const status::AgentStatus& s) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& c : s.snapshot().claims) out.emplace_back(c.uid, c.devices);
  return out;
}

TEST(StatusReportingHandler, RowsFollowEachCallAndAnOutsideChangeIsPickedUp) {
  boost::asio::io_context io;
  claims::Checkpoint cp;
  cp.claims["uid-0"] = completed("gpu-0");  // prepared before the agent started
  CheckpointWritingHandler inner;
  inner.cp = &cp;
  status::AgentStatus status("v", "node-a");
  StatusReportingHandler h(io.get_executor(), "gpu.nvidia.com", inner, status, [&cp] { return &cp; });
  h.refresh();
  using Rows = std::vector<std::pair<std::string, std::vector<std::string>>>;
  EXPECT_EQ(rows(status), (Rows{{"uid-0", {"gpu-0"}}}));

  EXPECT_TRUE(testing::run_awaitable(io, h.prepare({"ns", "gpu-1", "uid-1"})).ok());
  io.restart();
  io.run();  // the posted refresh
  EXPECT_EQ(rows(status), (Rows{{"uid-0", {"gpu-0"}}, {"uid-1", {"gpu-1"}}}));

  // A claim the checkpoint gained without a call here (a recovery, another path): the count no
  // longer matches after the next call, so every row is read again.
  cp.claims["uid-2"] = completed("gpu-2");
  EXPECT_TRUE(testing::run_awaitable(io, h.unprepare({"ns", "gpu-0", "uid-0"})).ok());
  io.restart();
  io.run();
  EXPECT_EQ(rows(status), (Rows{{"uid-1", {"gpu-1"}}, {"uid-2", {"gpu-2"}}}));
}

// After a call only the touched claim's row is new: the others are the very rows the previous
// snapshot held (what StatusService keeps a copy of), and another driver's rows stay shared too.
TEST(StatusReportingHandler, UntouchedRowsAreSharedWithThePreviousSnapshot) {
  boost::asio::io_context io;
  claims::Checkpoint cp;
  cp.claims["uid-0"] = completed("gpu-0");
  CheckpointWritingHandler inner;
  inner.cp = &cp;
  status::AgentStatus status("v", "node-a");
  status.set_claims("compute-domain.nvidia.com", systemd_bus::ClaimRows{{"uid-cd", "ns", "cd", "compute-domain.nvidia.com",
                                                                        "PrepareCompleted", {"channel-0"}}});
  StatusReportingHandler h(io.get_executor(), "gpu.nvidia.com", inner, status, [&cp] { return &cp; });
  h.refresh();
  const systemd_bus::StatusSnapshot before = status.snapshot();
  ASSERT_EQ(before.claims.size(), 2u);

  EXPECT_TRUE(testing::run_awaitable(io, h.prepare({"ns", "gpu-1", "uid-1"})).ok());
  io.restart();
  io.run();
  const auto& after = status.snapshot().claims;
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].uid, "uid-cd");
  EXPECT_EQ(after.row(0).get(), before.claims.row(0).get());
  EXPECT_EQ(after.parts()[0].get(), before.claims.parts()[0].get()) << "the other driver's list itself";
  EXPECT_EQ(after[1].uid, "uid-0");
  EXPECT_EQ(after.row(1).get(), before.claims.row(1).get());
  EXPECT_EQ(after[2].uid, "uid-1");
}

// The rows are published as lists per UID prefix: a call makes the list of its claim's prefix again
// and the snapshot shares every other list; a prefix whose last claim went has no list, and a
// claim the checkpoint gained behind the handler's back lists every prefix again.
TEST(StatusReportingHandler, ACallListsAgainOnlyItsClaimsPrefix) {
  boost::asio::io_context io;
  claims::Checkpoint cp;
  for (const char* uid : {"0a-1", "0a-2", "7f-1", "c3-1", "c"}) cp.claims[uid] = completed(uid);
  CheckpointWritingHandler inner;
  inner.cp = &cp;
  status::AgentStatus status("v", "node-a");
  StatusReportingHandler h(io.get_executor(), "gpu.nvidia.com", inner, status, [&cp] { return &cp; });
  h.refresh();
  const auto call = [&](auto awaitable) {
    EXPECT_TRUE(testing::run_awaitable(io, std::move(awaitable)).ok());
    io.restart();
    io.run();
  };
  using Rows = std::vector<std::pair<std::string, std::vector<std::string>>>;
  const auto before = status.snapshot().claims;
  ASSERT_EQ(before.parts().size(), 4u) << "c, 0a, 7f, c3";
  call(h.prepare({"ns", "7f-2", "7f-2"}));
  const auto after = status.snapshot().claims;
  ASSERT_EQ(after.parts().size(), 4u);
  EXPECT_EQ(after.parts()[0], before.parts()[0]);
  EXPECT_NE(after.parts()[1], before.parts()[1]) << "7f: listed again";
  EXPECT_EQ(after.parts()[2], before.parts()[2]);
  EXPECT_EQ(after.parts()[3], before.parts()[3]);
  EXPECT_EQ(rows(status), (Rows{{"0a-1", {"0a-1"}}, {"0a-2", {"0a-2"}}, {"7f-1", {"7f-1"}}, {"7f-2", {"7f-2"}},
                                {"c", {"c"}}, {"c3-1", {"c3-1"}}}));

  call(h.unprepare({"ns", "c", "c"}));
  EXPECT_EQ(status.snapshot().claims.parts().size(), 3u) << "no list left for c";
  EXPECT_EQ(status.snapshot().claims.size(), 5u);

  cp.claims["ff-1"] = completed("ff-1");  // behind the handler's back
  call(h.unprepare({"ns", "0a-1", "0a-1"}));
  EXPECT_EQ(rows(status), (Rows{{"0a-2", {"0a-2"}}, {"7f-1", {"7f-1"}}, {"7f-2", {"7f-2"}}, {"c3-1", {"c3-1"}},
                                {"ff-1", {"ff-1"}}}));
}

// Rows are compared by content: new rows equal to the old ones are no change (no listener call,
// so no PropertiesChanged), a changed row is.
TEST(AgentStatusClaims, EqualRowsAreNoChangeAndADifferentRowIs) {
  status::AgentStatus status("v", "node-a");
  int changes = 0;
  status.on_change([&changes](const systemd_bus::StatusSnapshot&) { ++changes; });
  const systemd_bus::ClaimStatus row{"uid-0", "ns", "a", "gpu.nvidia.com", "PrepareCompleted", {"gpu-0"}};
  status.set_claims("gpu.nvidia.com", systemd_bus::ClaimRows{row});
  EXPECT_EQ(changes, 1);
  status.set_claims("gpu.nvidia.com", systemd_bus::ClaimRows{row});  // other row objects, same content
  EXPECT_EQ(changes, 1);
  auto moved = row;
  moved.state = "PrepareStarted";
  status.set_claims("gpu.nvidia.com", systemd_bus::ClaimRows{moved});
  EXPECT_EQ(changes, 2);
  EXPECT_EQ(status.snapshot().claims[0].state, "PrepareStarted");
}

// A list is immutable once another holds it: a copy never sees the original's later rows, and a
// list of several parts equals one of a single part with the same rows.
TEST(ClaimRows, SharedPartsNeverChangeAndContentDecidesEquality) {
  using systemd_bus::ClaimRows;
  using systemd_bus::ClaimStatus;
  const ClaimStatus r0{"uid-0", "ns", "a", "gpu.nvidia.com", "PrepareCompleted", {"gpu-0"}};
  const ClaimStatus r1{"uid-1", "ns", "b", "gpu.nvidia.com", "PrepareStarted", {}};
  ClaimRows a{r0};
  const ClaimRows copy = a;
  a.push_back(r1);
  EXPECT_EQ(copy.size(), 1u);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.parts().size(), 2u) << "the shared first part was not grown";
  EXPECT_EQ(a.row(0).get(), copy.row(0).get());
  EXPECT_EQ(a, (ClaimRows{r0, r1}));
  EXPECT_EQ((ClaimRows{r0, r1}).parts().size(), 1u) << "a list nobody shares grows in place";
  EXPECT_NE(a, (ClaimRows{r1, r0}));

  ClaimRows gaps;  // empty parts are skipped when iterating
  gaps.append(std::make_shared<const std::vector<systemd_bus::ClaimRow>>());
  gaps.append(a.parts()[1]);
  gaps.append(std::make_shared<const std::vector<systemd_bus::ClaimRow>>());
  std::vector<std::string> uids;
  for (const auto& row : gaps) uids.push_back(row.uid);
  EXPECT_EQ(uids, std::vector<std::string>{"uid-1"});
  EXPECT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].uid, "uid-1");
}

}  // namespace
}  // namespace nvdra::drivers
