// Checkpoint cost per prepare against the number of claims already prepared (issue #33): for 1,
// 10, 100 and 1,000 prepared claims on one node, each measured prepare records its claim as the
// pipeline does and each unprepare erases one, through CheckpointCommitter + FileCheckpointStore on
// a real file with fsync. Two kinds of prepare: a plain claim (a GPU or MIG device: PrepareStarted
// staged in memory, PrepareCompleted saved: one save) and a claim whose steps need the record (a
// time slice, MPS, DynamicMIG, VFIO, FM: both saved). Per point: prepare and unprepare p50/p99 (µs),
// bytes written and fsyncs per prepare, and references measured in the same run: "full" (every save
// re-encodes every claim, two saves: the encoding before issue #33) and "floor" (writing and fsyncing
// the same bytes once, and twice, with no encoding at all: what one JSON file rewritten per commit
// costs whatever the encoder does), and the checkpoint's part of a start with that many claims (open and
// load: read, parse, verify). Writes JSON to stdout; a benchmark, not a test.
// Run: build/bench/claims/claims_checkpoint_scale_bench [--rounds N] [--dir D] [--claims N (one point)]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace claims = nvdra::claims;
using Clock = std::chrono::steady_clock;

// A completed adminAccess claim on one GPU, of the size the issue's 1,000-claim run wrote (~1 kB).
claims::CheckpointedClaim claim(int i, claims::ClaimState state) {
  claims::CheckpointedClaim c;
  c.state = state;
  c.status = json::parse(
      R"({"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-0","adminAccess":true}]},
          "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}},
          "reservedFor":[{"resource":"pods","name":"pod-)" + std::to_string(i) + R"(","uid":"6c4b1f0e-0000-4000-8000-000000000000"}]})");
  if (state == claims::ClaimState::kPrepareCompleted)
    c.prepared_devices = json::parse(R"([{"devices":[{"gpu":{"info":{"uuid":"GPU-4c1e0000-0000-0000-0000-000000000000"},"device":{"Requests":["gpu"],"PoolName":"node-a","DeviceName":"gpu-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=)" +
                                     std::to_string(i) + R"(-gpu-0"]}}}]}])")
                             .as_array();
  c.name = "claim-" + std::to_string(i);
  c.ns = "bench";
  return c;
}

// Claim UIDs as the API server makes them: random, so a new claim lands anywhere in the sorted map.
std::string uid(int i) {
  char buf[40];
  const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-8000-%012d", h, h >> 16, (h >> 4) & 0xFFF, i);
  return buf;
}

// Like FileCheckpointStore, but every save re-encodes every claim (the encoding before #33).
class FullEncodeStore final : public claims::CheckpointStore {
 public:
  explicit FullEncodeStore(claims::FileCheckpointStore& real) : real_(real) {}
  nvdra::Result<claims::LoadedCheckpoint> load() override { return real_.load(); }
  nvdra::Status save(const claims::Checkpoint& cp) override { return real_.save_bytes(claims::encode_checkpoint(cp)); }
  claims::CheckpointStats stats() const override { return real_.stats(); }
  std::string location() const override { return real_.location(); }

 private:
  claims::FileCheckpointStore& real_;
};

double pct(std::vector<double> v, int p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * static_cast<std::size_t>(p) / 100)];
}

struct Point {
  std::vector<double> prepare_us, unprepare_us;
  double bytes_per_prepare = 0, fsyncs_per_prepare = 0;
};

// How a measured prepare records its claim.
enum class Mode { kPlain, kRecorded, kFullEncode };

// Runs `rounds` prepare+unprepare pairs on a checkpoint that holds `held` claims.
Point measure(const std::string& dir, int held, int rounds, Mode mode) {
  std::filesystem::remove_all(dir);
  auto file = claims::FileCheckpointStore::open({dir}).value();
  FullEncodeStore full_store(*file);
  const bool full = mode == Mode::kFullEncode;
  claims::CheckpointStore& store = full ? static_cast<claims::CheckpointStore&>(full_store) : *file;
  asio::io_context io;
  nvdra::runtime::WorkerPool pool(2);
  claims::Checkpoint start;
  start.node_boot_id = "8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b";
  for (int i = 0; i < held; ++i) start.claims[uid(i)] = claim(i, claims::ClaimState::kPrepareCompleted);
  if (!store.save(start)) std::abort();
  claims::CheckpointCommitter committer(io.get_executor(), pool, store, start);
  Point out;
  double bytes = 0, fsyncs = 0;
  const auto saved = [&](int id, claims::ClaimState st) -> asio::awaitable<void> {
    if (!co_await committer.commit({{uid(id), claim(id, st)}})) std::abort();
    bytes += static_cast<double>(std::filesystem::file_size(dir + "/checkpoint.json"));
  };
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    // Warm-up: as many saves as it takes the encoder to reach its steady state (spans computed).
    // (The full encoding has no steady state to reach: two saves warm the page cache.)
    const int warmup = full ? 2 : held / 4 + 2;
    for (int i = 0; i < warmup; ++i)
      if (!co_await committer.commit({{uid(0), claim(0, claims::ClaimState::kPrepareCompleted)}})) std::abort();
    for (int r = 0; r < rounds; ++r) {
      const int id = held + r;
      const auto f0 = store.stats().fsyncs;
      auto t0 = Clock::now();
      if (mode == Mode::kPlain) committer.stage(uid(id), claim(id, claims::ClaimState::kPrepareStarted));
      else co_await saved(id, claims::ClaimState::kPrepareStarted);
      co_await saved(id, claims::ClaimState::kPrepareCompleted);
      out.prepare_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      fsyncs += static_cast<double>(store.stats().fsyncs - f0);
      t0 = Clock::now();
      if (!co_await committer.commit({{uid(id), std::nullopt}})) std::abort();
      out.unprepare_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  }, asio::detached);
  io.run();
  out.fsyncs_per_prepare = fsyncs / rounds;
  out.bytes_per_prepare = bytes / rounds;
  return out;
}

// `saves` atomic replaces of `size` bytes, no encoding: the floor of a prepare's commits.
std::vector<double> floor_us(const std::string& dir, std::size_t size, int rounds, int saves) {
  std::filesystem::remove_all(dir);
  auto file = claims::FileCheckpointStore::open({dir}).value();
  const std::string bytes(size, ' ');
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < saves; ++i)
      if (!file->save_bytes(bytes)) std::abort();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return us;
}

// The checkpoint's part of a start with `held` claims: open (the lock) and load (read, parse, verify both
// checksums) of the file the measured saves left, as the agent's start does; p50 in µs.
double load_us(const std::string& dir, int held, int rounds) {
  std::filesystem::remove_all(dir);
  {
    auto file = claims::FileCheckpointStore::open({dir}).value();
    claims::Checkpoint cp;
    cp.node_boot_id = "8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b";
    for (int i = 0; i < held; ++i) cp.claims[uid(i)] = claim(i, claims::ClaimState::kPrepareCompleted);
    if (!file->save(cp)) std::abort();
  }
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    auto file = claims::FileCheckpointStore::open({dir}).value();
    auto loaded = file->load();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!loaded || !loaded->checkpoint || loaded->checkpoint->claims.size() != static_cast<std::size_t>(held))
      std::abort();  // the claims saved must come back
  }
  return pct(us, 50);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 40;
  std::vector<int> counts{1, 10, 100, 1000};
  std::string dir = std::filesystem::temp_directory_path().string() + "/nvdra-checkpoint-scale";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--claims")) counts = {std::atoi(argv[i + 1])};  // one point (for perf)
  }
  json::array points;
  for (int held : counts) {
    const Point plain = measure(dir, held, rounds, Mode::kPlain);
    const Point recorded = measure(dir, held, rounds, Mode::kRecorded);
    const Point full = measure(dir, held, std::max(5, rounds / 4), Mode::kFullEncode);
    const auto size = static_cast<std::size_t>(plain.bytes_per_prepare);
    const auto floor = floor_us(dir, size, rounds, 1);
    const auto floor2 = floor_us(dir, size, rounds, 2);
    const double load = load_us(dir, held, rounds);
    json::object p;
    p["claims"] = held;
    p["prepare_p50_us"] = pct(plain.prepare_us, 50);
    p["prepare_p99_us"] = pct(plain.prepare_us, 99);
    p["unprepare_p50_us"] = pct(plain.unprepare_us, 50);
    p["unprepare_p99_us"] = pct(plain.unprepare_us, 99);
    p["bytes_written_per_prepare"] = plain.bytes_per_prepare;
    p["fsyncs_per_prepare"] = plain.fsyncs_per_prepare;
    p["recorded_prepare_p50_us"] = pct(recorded.prepare_us, 50);
    p["recorded_prepare_p99_us"] = pct(recorded.prepare_us, 99);
    p["recorded_bytes_written_per_prepare"] = recorded.bytes_per_prepare;
    p["recorded_fsyncs_per_prepare"] = recorded.fsyncs_per_prepare;
    p["full_encode_prepare_p50_us"] = pct(full.prepare_us, 50);
    p["floor_prepare_p50_us"] = pct(floor, 50);
    p["recorded_floor_prepare_p50_us"] = pct(floor2, 50);
    p["load_p50_us"] = load;
    points.push_back(std::move(p));
    std::cerr << "claims=" << held << " prepare p50 " << pct(plain.prepare_us, 50) << " us (floor " << pct(floor, 50)
              << "), with the record " << pct(recorded.prepare_us, 50) << " us (floor " << pct(floor2, 50)
              << ", full " << pct(full.prepare_us, 50) << ")\n";
  }
  std::filesystem::remove_all(dir);
  json::object out;
  out["rounds"] = rounds;
  out["points"] = std::move(points);
  std::cout << json::serialize(out) << "\n";
}
