// FabricManager partition cost through the production libnvfm.so.1 binding against the mock
// (hgx-h100-nvswitch, 15 partitions): connect, list the table, and one activate + deactivate of a
// 4-GPU partition — what a claim's prepare and unprepare add. The mock keeps its state in a file
// under flock (one read + one rename per call), so these numbers bound the mock, not a real FM
// (which trains NVLinks and programs NVSwitch routing on activation).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "fm/fabric_manager.hpp"

namespace {

std::string socket_path() { return (std::filesystem::temp_directory_path() / "nvdra-fm-bench" / "socket").string(); }

std::unique_ptr<nvdra::fm::FabricManager> open_mock() {
  auto fm = nvdra::fm::open_fabric_manager(nvdra::fm::LoadOptions{
      NVDRA_MOCK_FM_LIBRARY, "/", nvdra::fm::Endpoint{socket_path(), true}, std::chrono::milliseconds(1000)});
  if (!fm) throw std::runtime_error(fm.error().message);
  return std::move(fm).value();
}

void BM_OpenAndConnect(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(open_mock());
}
BENCHMARK(BM_OpenAndConnect)->Unit(benchmark::kMicrosecond);

void BM_ListPartitions(benchmark::State& state) {
  auto fm = open_mock();
  for (auto _ : state) {
    auto table = fm->partitions();
    if (!table) state.SkipWithError(table.error().message.c_str());
    benchmark::DoNotOptimize(table);
  }
}
BENCHMARK(BM_ListPartitions)->Unit(benchmark::kMicrosecond);

void BM_ActivateDeactivate4Gpu(benchmark::State& state) {
  auto fm = open_mock();
  for (auto _ : state) {
    if (auto st = fm->activate(1); !st) state.SkipWithError(st.error().message.c_str());
    if (auto st = fm->deactivate(1); !st) state.SkipWithError(st.error().message.c_str());
  }
}
BENCHMARK(BM_ActivateDeactivate4Gpu)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  const auto dir = std::filesystem::temp_directory_path() / "nvdra-fm-bench";
  std::filesystem::create_directories(dir);
  std::ofstream(socket_path()) << "";
  ::setenv("NVDRA_MOCK_PROFILE", "hgx-h100-nvswitch", 0);
  ::setenv("NVDRA_MOCK_STATE_DIR", dir.c_str(), 0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
