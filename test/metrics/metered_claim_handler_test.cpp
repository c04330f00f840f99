// MeteredClaimHandler: upstream's request series around a ClaimHandler, and the checkpoint
// counts (devices by upstream's device_type, MPS daemons) it refreshes after each call.
#include "agent/drivers/metered_claim_handler.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/metrics/metrics.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::drivers {
namespace {

claims::CheckpointedClaim claim(claims::ClaimState state, const char* devices) {
  claims::CheckpointedClaim c;
  c.state = state;
  c.prepared_devices = boost::json::parse(devices).as_array();
  return c;
}

const char* kGpuAndMig = R"([{"devices":[{"gpu":{"info":{}},"mig":null},{"gpu":null,"mig":{"concrete":{}}}],
                              "configState":{"mpsControlDaemonID":"uid-1-abcde"}},
                             {"devices":[{"gpu":null,"mig":null,"vfio":{"info":{}}},{"gpu":null,"mig":null}],
                              "configState":{}}])";

TEST(CountPrepared, CountsCompletedClaimsByDeviceTypeAndDistinctMpsDaemons) {
  claims::Checkpoint cp;
  cp.claims["a"] = claim(claims::ClaimState::kPrepareCompleted, kGpuAndMig);
  cp.claims["b"] = claim(claims::ClaimState::kPrepareStarted, kGpuAndMig);  // not prepared: not counted
  cp.claims["c"] = claim(claims::ClaimState::kPrepareCompleted,
                         R"([{"devices":[{"channel":{"info":{"id":0}},"daemon":null}],"configState":{"Type":"channel"}}])");
  const auto counts = count_prepared(cp);
  EXPECT_EQ(counts.devices_by_type,
            (std::map<std::string, int64_t>{{"channel", 1}, {"gpu", 1}, {"mig", 1}, {"unknown", 1}, {"vfio", 1}}));
  EXPECT_EQ(counts.mps_daemons, 1);
}

// The totals kept as claims come and go equal a count of the whole checkpoint at every step.
TEST(CountTotals, FollowClaimsAsACountOfTheWholeCheckpointWould) {
  const char* kTwoGroupsOneDaemon = R"([{"devices":[{"gpu":{},"mig":null}],"configState":{"mpsControlDaemonID":"d-1"}},
                                        {"devices":[{"gpu":{},"mig":null}],"configState":{"mpsControlDaemonID":"d-1"}}])";
  claims::Checkpoint cp;
  CountTotals totals;
  const auto put = [&](const std::string& uid, const char* devices) {
    cp.claims[uid] = claim(claims::ClaimState::kPrepareCompleted, devices);
    totals.add(count_claim(cp.claims[uid]));
  };
  const auto drop = [&](const std::string& uid) {
    totals.remove(count_claim(cp.claims[uid]));
    cp.claims.erase(uid);
  };
  const auto same = [&] {
    const auto whole = count_prepared(cp);
    EXPECT_EQ(totals.devices_by_type(), whole.devices_by_type);
    EXPECT_EQ(totals.mps_daemons(), whole.mps_daemons);
  };
  put("a", kGpuAndMig);
  put("b", kTwoGroupsOneDaemon);
  same();
  EXPECT_EQ(totals.mps_daemons(), 2);
  put("c", kGpuAndMig);  // uid-1-abcde again: still two daemons
  same();
  drop("a");
  same();
  EXPECT_EQ(totals.mps_daemons(), 2) << "c still holds uid-1-abcde";
  drop("b");
  same();
  EXPECT_EQ(totals.mps_daemons(), 1);
  drop("c");
  same();
  EXPECT_TRUE(totals.devices_by_type().empty()) << "a type whose devices are all gone leaves the totals";
}

struct FakeHandler : kubelet::ClaimHandler {
  bool fail = false;
  claims::Checkpoint* cp = nullptr;
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef ref) override {
    if (fail) co_return make_error(ErrorCode::kInvalidArgument, "no");
    cp->claims[ref.uid] = claim(claims::ClaimState::kPrepareCompleted, R"([{"devices":[{"gpu":{},"mig":null}]}])");
    co_return std::vector<kubelet::PreparedDevice>{};
  }
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef ref) override {
    cp->claims.erase(ref.uid);
    co_return Status{};
  }
};

std::string sample(const std::string& page, const std::string& key) {
  const auto at = page.find("\n" + key + " ");
  if (at == std::string::npos) return "missing";
  const auto start = at + key.size() + 2;
  return page.substr(start, page.find('\n', start) - start);
}

TEST(MeteredClaimHandler, CountsRequestsErrorsAndPreparedDevices) {
  boost::asio::io_context io;
  claims::Checkpoint cp;
  FakeHandler inner;
  inner.cp = &cp;
  metrics::Metrics m("node-a", "v", {"gpu.nvidia.com"});
  MeteredClaimHandler h("gpu.nvidia.com", inner, m, [&cp] { return &cp; });
  const kubelet::ClaimRef ref{"ns", "c", "uid-1"};
  EXPECT_TRUE(testing::run_awaitable(io, h.prepare(ref)).ok());
  inner.fail = true;
  EXPECT_FALSE(testing::run_awaitable(io, h.prepare({"ns", "d", "uid-2"})).ok());
  auto page = m.render();
  const std::string prep = "{driver=\"gpu.nvidia.com\",operation=\"prepare\"}";
  EXPECT_EQ(sample(page, "nvidia_dra_requests_total" + prep), "1");
  EXPECT_EQ(sample(page, "nvidia_dra_request_duration_seconds_count" + prep), "2");
  EXPECT_EQ(sample(page, "nvidia_dra_requests_inflight" + prep), "0");
  EXPECT_EQ(sample(page, "nvidia_dra_node_prepare_errors_total{driver=\"gpu.nvidia.com\",error_type=\"prepare_devices\"}"),
            "1");
  const std::string gpus = "nvidia_dra_prepared_devices{device_type=\"gpu\",driver=\"gpu.nvidia.com\",node=\"node-a\"}";
  EXPECT_EQ(sample(page, gpus), "1");
  EXPECT_EQ(sample(page, "nvdra_mps_control_daemons{driver=\"gpu.nvidia.com\"}"), "0");
  EXPECT_TRUE(testing::run_awaitable(io, h.unprepare(ref)).ok());
  page = m.render();
  EXPECT_EQ(sample(page, "nvidia_dra_requests_total{driver=\"gpu.nvidia.com\",operation=\"unprepare\"}"), "1");
  EXPECT_EQ(sample(page, gpus), "0");
}

TEST(MeteredClaimHandler, EachCallCountsItsClaimAgainAndAnOutsideChangeCountsEverything) {
  boost::asio::io_context io;
  claims::Checkpoint cp;
  cp.claims["old"] = claim(claims::ClaimState::kPrepareCompleted, kGpuAndMig);  // before the start
  FakeHandler inner;
  inner.cp = &cp;
  metrics::Metrics m("node-a", "v", {"gpu.nvidia.com"});
  MeteredClaimHandler h("gpu.nvidia.com", inner, m, [&cp] { return &cp; });
  h.refresh();
  const std::string gpus = "nvidia_dra_prepared_devices{device_type=\"gpu\",driver=\"gpu.nvidia.com\",node=\"node-a\"}";
  const std::string daemons = "nvdra_mps_control_daemons{driver=\"gpu.nvidia.com\"}";
  EXPECT_EQ(sample(m.render(), gpus), "1");
  EXPECT_EQ(sample(m.render(), daemons), "1");
  EXPECT_TRUE(testing::run_awaitable(io, h.prepare({"ns", "a", "uid-a"})).ok());
  EXPECT_EQ(sample(m.render(), gpus), "2");
  // Two claims on one MPS daemon count it once; the last to go takes it.
  cp.claims["besides"] = claim(claims::ClaimState::kPrepareCompleted, kGpuAndMig);  // not through a call
  EXPECT_TRUE(testing::run_awaitable(io, h.unprepare({"ns", "a", "uid-a"})).ok());
  EXPECT_EQ(sample(m.render(), gpus), "2") << "the claim added besides is counted";
  EXPECT_EQ(sample(m.render(), daemons), "1");
  cp.claims.erase("besides");
  cp.claims.erase("old");
  EXPECT_TRUE(testing::run_awaitable(io, h.unprepare({"ns", "x", "old"})).ok());
  EXPECT_EQ(sample(m.render(), gpus), "0");
  EXPECT_EQ(sample(m.render(), daemons), "0");
}

}  // namespace
}  // namespace nvdra::drivers
