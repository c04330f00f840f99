// Claim spec write latency: build + serialize, then FileSpecStore::apply (temp file, fsync,
// rename, fsync dir). Reports p50/p99 per claim as counters (microseconds), single writes and a
// group-commit batch of 8 claims (per-file fsync or one syncfs).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "cdi/device_edits.hpp"
#include "cdi/file_spec_store.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace {

namespace cdi = nvdra::cdi;
using Clock = std::chrono::steady_clock;

std::string bench_dir() {
  const char* env = std::getenv("NVDRA_BENCH_DIR");
  std::string dir = env ? env : NVDRA_BENCH_DEFAULT_DIR;
  std::filesystem::create_directories(dir);
  return dir;
}

cdi::BuiltSpec claim(int i) {
  cdi::HostView host;
  auto uid = "3b1f0c6e-8a4d-4f43-9f3c-" + std::to_string(100000000000 + i);
  cdi::MigCaps caps{234, {30, 292u}, {31, 292u}};
  return cdi::build_claim_spec(cdi::kGpuVendor, uid,
                               {{"gpu-0", cdi::gpu_edits({0, ""}, host)},
                                {"gpu-1-mig-1g10gb-19-0", cdi::mig_edits({1, 1, 0}, caps, host)}})
      .value();
}

void report(benchmark::State& state, std::vector<double>& us, double per) {
  std::sort(us.begin(), us.end());
  if (us.empty()) return;
  state.counters["p50_us"] = us[us.size() / 2] / per;
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)] / per;
}

void BM_BuildClaimSpec(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(claim(i++));
}
BENCHMARK(BM_BuildClaimSpec);

void BM_WriteClaimSpecDurably(benchmark::State& state) {
  auto store = cdi::FileSpecStore::open(bench_dir()).value();
  std::vector<double> us;
  int i = 0;
  for (auto _ : state) {
    auto spec = claim(i++ % 64);
    auto t0 = Clock::now();
    auto s = store->write(spec);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!s) state.SkipWithError(s.error().describe().c_str());
  }
  report(state, us, 1);
  std::filesystem::remove_all(bench_dir());
}
BENCHMARK(BM_WriteClaimSpecDurably)->Unit(benchmark::kMicrosecond)->Iterations(300);

void BM_WriteEightClaimsAsOneBatch(benchmark::State& state) {
  cdi::FileSpecStore::Options opts;
  opts.batch_sync = state.range(0) ? cdi::BatchSync::kSyncfs : cdi::BatchSync::kPerFileFsync;
  auto store = cdi::FileSpecStore::open(bench_dir(), opts).value();
  std::vector<double> us;
  std::vector<cdi::SpecChange> batch;
  for (int k = 0; k < 8; ++k) batch.push_back(cdi::SpecChange::write(claim(k)));
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto s = store->apply(batch);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!s) state.SkipWithError(s.error().describe().c_str());
  }
  report(state, us, 8);  // per claim
  std::filesystem::remove_all(bench_dir());
}
// Arg 0: an fsync per file; arg 1: one syncfs() per batch.
BENCHMARK(BM_WriteEightClaimsAsOneBatch)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->Iterations(100);

}  // namespace

BENCHMARK_MAIN();
