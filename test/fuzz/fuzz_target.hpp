#pragma once
// One fuzz target = one function from input bytes to a Verdict, registered by name. The same target
// source links into two drivers: libfuzzer_driver.cpp (clang -fsanitize=fuzzer, ASan tree) and
// replay_main.cpp (every build), which replays the corpus kept in test/fuzz/corpus/<name>/ and
// checks each hand-written seed's verdict. An invariant the target checks goes through check():
// under libFuzzer a broken one aborts (a crash libFuzzer saves), under replay it fails the test.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace nvdra::fuzz {

enum class Verdict { kAccepted, kRejected };
using TargetFn = Verdict (*)(std::span<const uint8_t> data);

struct Target {
  const char* name;
  TargetFn fn;
};

// Registers at static initialisation; targets are compiled into executables, never archives.
struct Registration {
  Registration(const char* name, TargetFn fn);
};
std::span<const Target> targets();

// Reports a broken invariant; defined by each driver.
void violated(const char* what, const char* file, int line);

inline Verdict verdict(bool accepted) { return accepted ? Verdict::kAccepted : Verdict::kRejected; }

}  // namespace nvdra::fuzz

#define NVDRA_FUZZ_CHECK(cond) \
  ((cond) ? void() : ::nvdra::fuzz::violated(#cond, __FILE__, __LINE__))

#define NVDRA_FUZZ_TARGET(name)                                                                   \
  static ::nvdra::fuzz::Verdict nvdra_fuzz_##name(std::span<const uint8_t> data);                 \
  static const ::nvdra::fuzz::Registration nvdra_fuzz_registration_##name(#name, &nvdra_fuzz_##name); \
  static ::nvdra::fuzz::Verdict nvdra_fuzz_##name(std::span<const uint8_t> data)
