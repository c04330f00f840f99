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
  const auto& after = status.snapshot().claims.shared();
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0]->uid, "uid-cd");
  EXPECT_EQ(after[0].get(), before.claims.shared()[0].get());
  EXPECT_EQ(after[1]->uid, "uid-0");
  EXPECT_EQ(after[1].get(), before.claims.shared()[1].get());
  EXPECT_EQ(after[2]->uid, "uid-1");
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

}  // namespace
}  // namespace nvdra::drivers
