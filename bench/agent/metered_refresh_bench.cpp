// What the checkpoint gauges cost after one kubelet call (MeteredClaimHandler::refresh(uid)) with 1 to
// 1,000 claims prepared on the node: that claim counted again and the prepared-devices and MPS-daemon
// gauges set (issue #33: a cost that grew with the claims already there). Reported per call.
// Run: build/bench/agent/agent_metered_bench
#include <benchmark/benchmark.h>

#include <boost/json/parse.hpp>

#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/drivers/metered_claim_handler.hpp"
#include "agent/metrics/metrics.hpp"

namespace {

using nvdra::claims::Checkpoint;
using nvdra::claims::CheckpointedClaim;
using nvdra::claims::ClaimState;

// Does nothing: refresh() is what is measured.
struct IdleHandler : nvdra::kubelet::ClaimHandler {
  boost::asio::awaitable<nvdra::Result<std::vector<nvdra::kubelet::PreparedDevice>>> prepare(
      nvdra::kubelet::ClaimRef) override {
    co_return std::vector<nvdra::kubelet::PreparedDevice>{};
  }
  boost::asio::awaitable<nvdra::Status> unprepare(nvdra::kubelet::ClaimRef) override { co_return nvdra::Status{}; }
};

void BM_RefreshAfterOneCall(benchmark::State& state) {
  Checkpoint cp;
  const auto devices = boost::json::parse(R"([{"devices":[{"gpu":{"info":{}},"mig":null}],
                                              "configState":{"mpsControlDaemonID":"d-1"}}])").as_array();
  for (int64_t i = 0; i < state.range(0); ++i) {
    CheckpointedClaim c;
    c.state = ClaimState::kPrepareCompleted;
    c.prepared_devices = devices;
    cp.claims["uid-" + std::to_string(i)] = std::move(c);
  }
  IdleHandler inner;
  nvdra::metrics::Metrics metrics("node-a", "v", {"gpu.nvidia.com"});
  nvdra::drivers::MeteredClaimHandler handler("gpu.nvidia.com", inner, metrics, [&cp] { return &cp; });
  handler.refresh();
  const std::string uid = "uid-0";
  for (auto _ : state) handler.refresh(uid);
}
BENCHMARK(BM_RefreshAfterOneCall)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
