// Replays a fuzz target's corpus as a normal test in every build:
//   fuzz_replay [-v] <target> <dir>      (-v prints each input's verdict, for naming new seeds)
// Every file must run without a broken invariant (or a sanitizer report in the sanitizer trees).
// Hand-written seeds state their verdict in their name: "ok-…" must be accepted, "err-…" rejected;
// the corpus needs at least one of each so the replay checks the parser both ways. Other names
// (libFuzzer's sha1 names of merged units, crash-… regressions) are only checked for invariants.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test/fuzz/fuzz_target.hpp"

namespace nvdra::fuzz {
namespace {
int broken = 0;
}
void violated(const char* what, const char* file, int line) {
  std::fprintf(stderr, "  invariant broken at %s:%d: %s\n", file, line, what);
  ++broken;
}
}  // namespace nvdra::fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using nvdra::fuzz::Verdict;
  const bool verbose = argc > 1 && std::strcmp(argv[1], "-v") == 0;
  if (verbose) {
    --argc;
    ++argv;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_replay [-v] <target> <corpus dir>\n");
    return 2;
  }
  const auto all = nvdra::fuzz::targets();
  const auto target = std::find_if(all.begin(), all.end(), [&](const auto& t) { return std::strcmp(t.name, argv[1]) == 0; });
  if (target == all.end()) {
    std::fprintf(stderr, "fuzz_replay: no target named %s\n", argv[1]);
    return 2;
  }
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(argv[2], ec))
    if (e.is_regular_file()) files.push_back(e.path());
  if (ec) {
    std::fprintf(stderr, "fuzz_replay: cannot list %s: %s\n", argv[2], ec.message().c_str());
    return 1;
  }
  std::sort(files.begin(), files.end());
  int failures = 0, accepted_seeds = 0, rejected_seeds = 0;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const int before = nvdra::fuzz::broken;
    const Verdict got = target->fn(data);
    const std::string name = path.filename().string();
    bool ok = nvdra::fuzz::broken == before;
    if (verbose) std::printf("%s %s\n", got == Verdict::kAccepted ? "accepted" : "rejected", name.c_str());
    if (name.starts_with("ok-")) {
      ++accepted_seeds;
      if (got != Verdict::kAccepted) {
        std::fprintf(stderr, "  %s: rejected, the seed's name says it is accepted\n", name.c_str());
        ok = false;
      }
    } else if (name.starts_with("err-")) {
      ++rejected_seeds;
      if (got != Verdict::kRejected) {
        std::fprintf(stderr, "  %s: accepted, the seed's name says it is rejected\n", name.c_str());
        ok = false;
      }
    }
    if (!ok) {
      std::fprintf(stderr, "FAIL %s\n", path.c_str());
      ++failures;
    }
  }
  if (accepted_seeds == 0 || rejected_seeds == 0) {
    std::fprintf(stderr, "fuzz_replay %s: %s needs at least one ok-… and one err-… seed (has %d and %d)\n",
                 argv[1], argv[2], accepted_seeds, rejected_seeds);
    ++failures;
  }
  std::printf("fuzz_replay %s: %zu inputs (%d ok-, %d err- seeds), %d failed\n", argv[1], files.size(),
              accepted_seeds, rejected_seeds, failures);
  return failures == 0 ? 0 : 1;
}
