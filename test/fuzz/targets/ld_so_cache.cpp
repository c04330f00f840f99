// The host's /etc/ld.so.cache (cdi/ld_so_cache), both formats. Invariant: every string returned
// lies within the input's size.
#include "cdi/ld_so_cache.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(ld_so_cache) {
  auto parsed = nvdra::cdi::parse_ld_so_cache(data);
  if (!parsed.ok()) return nvdra::fuzz::Verdict::kRejected;
  for (const auto& e : *parsed) {
    NVDRA_FUZZ_CHECK(e.name.size() <= data.size());
    NVDRA_FUZZ_CHECK(e.path.size() <= data.size());
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
