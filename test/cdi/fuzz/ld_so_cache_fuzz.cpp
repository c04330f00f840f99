// libFuzzer target for the ld.so.cache parser (built with -DNVDRA_FUZZ=ON and clang). The unit
// test LdSoCache.FuzzCorpusSeedsParseWithoutCrashing links this file too and runs the seeds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "cdi/ld_so_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = nvdra::cdi::parse_ld_so_cache(std::span<const uint8_t>(data, size));
  if (parsed.ok()) {
    // Every string the parser returns must lie inside the input.
    for (const auto& e : *parsed)
      if (e.name.size() > size || e.path.size() > size) std::abort();
  }
  return 0;
}
