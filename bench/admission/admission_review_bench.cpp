// review() on a ResourceClaimTemplate with four opaque configs (three gpu.nvidia.com, one
// compute-domain.nvidia.com): the cost of one admission decision without the network.
#include <benchmark/benchmark.h>

#include "agent/admission/admission_review.hpp"
#include "test/admission/review_builder.hpp"

namespace {

using namespace nvdra::admission;
using test::gpu_config;
using test::opaque;

std::string four_configs(bool bad) {
  return test::review_of(
      "resourceclaimtemplates", "v1",
      test::claim_spec(
          {opaque("gpu.nvidia.com",
                  gpu_config({{"sharing", {{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", bad ? 120 : 50},
                                                                               {"defaultPinnedDeviceMemoryLimit", "10Gi"}}}}}})),
           opaque("gpu.nvidia.com",
                  gpu_config({{"sharing", {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}}})),
           opaque("gpu.nvidia.com", gpu_config({{"iommu", {{"backendPolicy", "PreferIommuFD"}}}}, "VfioDeviceConfig")),
           opaque("compute-domain.nvidia.com",
                  gpu_config({{"domainID", "1f0c2a9e-5a35-4d8e-9c1d-7a7a2b4d9e10"}, {"allocationMode", "All"}},
                             "ComputeDomainChannelConfig"))}));
}

void run(benchmark::State& state, bool bad) {
  const auto body = four_configs(bad);
  const nvdra::claims::ConfigGates gates{true, true, true, true};
  for (auto _ : state) {
    auto reply = review(body, gates);
    benchmark::DoNotOptimize(reply.body.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_ReviewAllowed(benchmark::State& state) { run(state, false); }
void BM_ReviewDenied(benchmark::State& state) { run(state, true); }
BENCHMARK(BM_ReviewAllowed);
BENCHMARK(BM_ReviewDenied);

}  // namespace

BENCHMARK_MAIN();
