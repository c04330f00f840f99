// Discovery cost through the production dlopen path against the mock (DGX A100 profile, 8 GPUs,
// 7 MIG devices): what `nvdra-agent devices` and start-up spend in NVML + the model, and the pure
// published-devices mapping. The mock re-reads its state file per call, so these numbers bound the
// mock, not real NVML (which answers from the kernel driver).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>

#include "nvml/discovery.hpp"
#include "nvml/published_devices.hpp"

namespace {

std::unique_ptr<nvdra::nvml::GpuLibrary> open_mock() {
  auto lib = nvdra::nvml::open_nvml(nvdra::nvml::LoadOptions{NVDRA_MOCK_LIBRARY, "/"});
  if (!lib) throw std::runtime_error(lib.error().message);
  return std::move(lib).value();
}

void BM_OpenAndInitNvml(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(open_mock());
}
BENCHMARK(BM_OpenAndInitNvml)->Unit(benchmark::kMicrosecond);

void BM_DiscoverDgxA100(benchmark::State& state) {
  auto lib = open_mock();
  for (auto _ : state) {
    auto model = nvdra::nvml::discover(*lib);
    if (!model) state.SkipWithError(model.error().message.c_str());
    benchmark::DoNotOptimize(model);
  }
}
BENCHMARK(BM_DiscoverDgxA100)->Unit(benchmark::kMillisecond);

void BM_PublishedDevicesDgxA100(benchmark::State& state) {
  auto lib = open_mock();
  const auto model = nvdra::nvml::discover(*lib).value();
  for (auto _ : state) benchmark::DoNotOptimize(nvdra::nvml::published_gpu_devices(model));
}
BENCHMARK(BM_PublishedDevicesDgxA100)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  const auto dir = std::filesystem::temp_directory_path() / "nvdra-nvml-bench";
  std::filesystem::create_directories(dir);
  ::setenv("NVDRA_MOCK_PROFILE", "dgx-a100", 0);
  ::setenv("NVDRA_MOCK_STATE_DIR", dir.c_str(), 0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(dir);
  return 0;
}
