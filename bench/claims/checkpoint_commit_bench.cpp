// Checkpoint commit latency through CheckpointCommitter + FileCheckpointStore (encode, temp file,
// write, fsync, rename, fsync dir), as the pipeline sees it: one claim alone, and 64 claims
// committing at once (group commit). Reports per-caller p50/p99 (µs) and fsyncs per claim.
// Run: build/bench/claims/claims_checkpoint_bench; NVDRA_BENCH_DIR picks the directory (put it on
// the disk that holds the kubelet plugins dir).
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace {

namespace asio = boost::asio;
namespace claims = nvdra::claims;
using Clock = std::chrono::steady_clock;

std::string bench_dir(const char* name) {
  const char* env = std::getenv("NVDRA_BENCH_DIR");
  std::string dir = std::string(env ? env : NVDRA_BENCH_DEFAULT_DIR) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A completed one-GPU claim of realistic size (status with allocation + one device group).
claims::CheckpointedClaim claim(int i) {
  claims::CheckpointedClaim c;
  c.state = claims::ClaimState::kPrepareCompleted;
  c.status = boost::json::parse(
      R"({"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-0"}],
          "config":[{"source":"FromClaim","requests":["gpu"],"opaque":{"driver":"gpu.nvidia.com","parameters":{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}}}]},
          "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}},
          "reservedFor":[{"resource":"pods","name":"pod","uid":"6c4b1f0e-0000-4000-8000-000000000000"}]})");
  c.prepared_devices = boost::json::parse(
      R"([{"devices":[{"gpu":{"info":{"uuid":"GPU-4c1e0000-0000-0000-0000-000000000000"},"device":{"Requests":["gpu"],"PoolName":"node-a","DeviceName":"gpu-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=3b1f0c6e-8a4d-4f43-9f3c-000000000000-gpu-0"]}},"mig":null}],"configState":{"timeSliceApplied":true}}])")
                           .as_array();
  c.name = "claim-" + std::to_string(i);
  c.ns = "bench";
  return c;
}

struct Rig {
  explicit Rig(const char* name)
      : store(claims::FileCheckpointStore::open({bench_dir(name)}).value()),
        pool(2),
        committer(io.get_executor(), pool, *store, claims::Checkpoint{}) {}
  asio::io_context io;
  std::unique_ptr<claims::FileCheckpointStore> store;
  nvdra::runtime::WorkerPool pool;
  claims::CheckpointCommitter committer;

  // `n` callers commit at once; returns each caller's latency in µs.
  std::vector<double> round(int n, int base, bool& failed) {
    std::vector<double> us;
    int done = 0;
    io.restart();
    auto guard = asio::make_work_guard(io);
    for (int i = 0; i < n; ++i) {
      const int id = (base + i) % 64;  // the checkpoint holds at most 64 claims
      asio::co_spawn(
          io,
          [this, id, &us, &done, &failed, n]() -> asio::awaitable<void> {
            const auto t0 = Clock::now();
            auto s = co_await committer.commit({claims::ClaimUpdate{"uid-" + std::to_string(id), claim(id)}});
            us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            if (!s) failed = true;
            if (++done == n) io.stop();
          },
          asio::detached);
    }
    io.run();
    return us;
  }
};

void report(benchmark::State& state, std::vector<double>& us, const Rig& rig, double claims_committed) {
  std::sort(us.begin(), us.end());
  if (us.empty()) return;
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  const auto stats = rig.store->stats();
  state.counters["fsyncs_per_claim"] = static_cast<double>(stats.fsyncs) / claims_committed;
  state.counters["writes_per_claim"] = static_cast<double>(stats.saves) / claims_committed;
}

void BM_CommitClaims(benchmark::State& state) {
  const int concurrent = static_cast<int>(state.range(0));
  Rig rig(concurrent == 1 ? "one" : "many");
  std::vector<double> us;
  int base = 0;
  bool failed = false;
  for (auto _ : state) {
    auto round = rig.round(concurrent, base, failed);
    us.insert(us.end(), round.begin(), round.end());
    base += concurrent;
  }
  if (failed) state.SkipWithError("a commit failed");
  report(state, us, rig, static_cast<double>(base));
  state.SetItemsProcessed(base);
}
BENCHMARK(BM_CommitClaims)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_EncodeCheckpoint64Claims(benchmark::State& state) {
  claims::Checkpoint cp;
  cp.node_boot_id = "8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b";
  for (int i = 0; i < 64; ++i) cp.claims["uid-" + std::to_string(i)] = claim(i);
  for (auto _ : state) benchmark::DoNotOptimize(claims::encode_checkpoint(cp));
}
BENCHMARK(BM_EncodeCheckpoint64Claims)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
