// Driver discovery on a driver root shaped like a host's: a merged /usr (/lib -> usr/lib), N other
// libraries beside NVIDIA's in the library directory, each with its SONAME link, and an
// ld.so.cache that names them all under /lib/<arch>/, as Debian's does. The agent walks it once per
// start (both drivers share the walk) and again when the driver changes.
// Run: build/bench/cdi/driver_discovery_bench [--benchmark_filter=…]
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>

#include "cdi/driver_discovery.hpp"
#include "cdi/driver_libraries.hpp"
#include "cdi/ld_so_cache.hpp"
#include "cdi/root_path.hpp"
#include "test/cdi/fake_driver_root.hpp"

namespace {

namespace fs = std::filesystem;
using namespace nvdra::cdi;

std::unique_ptr<testing::FakeDriverRoot> host_like_root(int others) {
  testing::FakeDriverOptions options;
  options.ld_cache = false;
  auto fake = std::make_unique<testing::FakeDriverRoot>(options);
  const std::string r = fake->driver_root();
  const std::string lib = fake->lib_dir();                           // /usr/lib/<arch>
  const std::string listed = "/lib" + lib.substr(lib.rfind('/'));    // /lib/<arch>, as ldconfig lists it
  fs::rename(r + "/lib/firmware", r + "/usr/lib/firmware");
  fs::remove(r + "/lib");
  testing::make_symlink("usr/lib", r + "/lib");
  const int32_t flags = kLdFlagElfLibc6 | native_ld_arch_flag();
  std::vector<testing::LdCacheRecord> records;
  for (int i = 0; i < others; ++i) {
    const std::string soname = "libhost" + std::to_string(i) + ".so." + std::to_string(i % 7);
    testing::write_file(r + lib + "/" + soname + ".0.0", "ELF");
    testing::make_symlink(soname + ".0.0", r + lib + "/" + soname);
    records.push_back({soname, listed + "/" + soname, flags});
  }
  for (const auto& l : testing::fake_driver_libraries()) {
    const auto soname = l.soname.ends_with(".") ? l.soname + fake->options().version : l.soname;
    records.push_back({soname, listed + "/" + soname, flags});
  }
  const auto bytes = testing::build_ld_so_cache(records);
  testing::write_file(r + "/etc/ld.so.cache", std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return fake;
}

const testing::FakeDriverRoot& root_with(int others) {
  static std::map<int, std::unique_ptr<testing::FakeDriverRoot>> roots;
  auto& slot = roots[others];
  if (!slot) slot = host_like_root(others);
  return *slot;
}

// The whole walk, as a start makes it.
void BM_DiscoverDriver(benchmark::State& state) {
  const auto& fake = root_with(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto inv = discover_driver(fake.roots());
    if (!inv) state.SkipWithError(inv.error().describe().c_str());
    benchmark::DoNotOptimize(inv);
  }
}
BENCHMARK(BM_DiscoverDriver)->Arg(0)->Arg(1000)->Arg(4000)->Unit(benchmark::kMicrosecond);

// Every library candidate resolved: each path on its own (each lstats every directory on its way,
// as the walk did before session 30) against one resolver for the walk.
void BM_ResolveCandidates(benchmark::State& state) {
  const auto& fake = root_with(static_cast<int>(state.range(0)));
  RootResolver lister(fake.driver_root());
  const auto candidates = library_candidates(lister);
  const bool shared = state.range(1) != 0;
  for (auto _ : state) {
    RootResolver walk(fake.driver_root());
    std::size_t found = 0;
    for (const auto& c : candidates)
      found += (shared ? walk.resolve(c.path) : resolve_in_root(fake.driver_root(), c.path)).has_value();
    benchmark::DoNotOptimize(found);
  }
  state.counters["paths"] = static_cast<double>(candidates.size());
}
BENCHMARK(BM_ResolveCandidates)
    ->ArgNames({"others", "one_resolver"})
    ->ArgsProduct({{0, 1000, 4000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
