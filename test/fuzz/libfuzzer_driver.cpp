// libFuzzer entry point: the executable holds exactly one target; a broken invariant aborts so
// libFuzzer saves the input (crash-<sha1>) for test/fuzz/corpus/<name>/ (see DEVELOPERS.md).
#include <cstdio>
#include <cstdlib>

#include "test/fuzz/fuzz_target.hpp"

namespace nvdra::fuzz {
void violated(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", file, line, what);
  std::abort();
}
}  // namespace nvdra::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto all = nvdra::fuzz::targets();
  if (all.size() != 1) {
    std::fprintf(stderr, "fuzzer built with %zu targets, expected one\n", all.size());
    std::abort();
  }
  (void)all[0].fn(std::span<const uint8_t>(data, size));
  return 0;
}
