// A target for testing fuzz_replay itself: input "yes…" is accepted, "no…" rejected, and
// "break…" breaks an invariant.
#include <string_view>

#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(selftest) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  NVDRA_FUZZ_CHECK(!text.starts_with("break"));
  return nvdra::fuzz::verdict(text.starts_with("yes"));
}
