#include "agent/claims/checkpoint/checkpoint_checksum.hpp"

#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::claims {
namespace {

constexpr uint32_t kPrime = 16777619u;

// go-spew writes each byte in decimal; every byte but the first is preceded by a space (the first
// skips it). A table, as this runs over the whole file on every save.
struct Decimal {
  char text[4];
  uint8_t size;
};
constexpr auto kDecimal = [] {
  std::array<Decimal, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    auto& d = t[b];
    d.text[0] = ' ';
    if (b >= 100) d.text[++d.size] = static_cast<char>('0' + b / 100);
    if (b >= 10) d.text[++d.size] = static_cast<char>('0' + b / 10 % 10);
    d.text[++d.size] = static_cast<char>('0' + b % 10);
    ++d.size;
  }
  return t;
}();

uint32_t step(uint32_t h, char c) { return (h ^ static_cast<uint8_t>(c)) * kPrime; }

// One character on all 256 lanes. AVX2 multiplies 8 lanes at once (SSE2 has no 32-bit lane
// multiply): 5-6x faster where the CPU has it, picked at load time.
// Not under the sanitizers: their runtime is not set up yet when ifunc resolvers run.
#if defined(__x86_64__) && defined(__clang__)  // (nested: GCC 12 cannot parse __has_feature)
#if !__has_feature(address_sanitizer) && !__has_feature(thread_sanitizer) && \
    !__has_feature(undefined_behavior_sanitizer)
__attribute__((target_clones("avx2", "default")))
#endif
#endif
void step_lanes(std::array<uint32_t, 256>& lanes, uint32_t c) {
  for (auto& h : lanes) h = (h ^ c) * kPrime;
}

}  // namespace

ChecksumSpan::ChecksumSpan(std::string_view bytes) {
  std::array<uint32_t, 256> lanes;
  for (uint32_t l = 0; l < 256; ++l) lanes[l] = l;
  for (char b : bytes) {
    const auto& d = kDecimal[static_cast<uint8_t>(b)];
    for (uint8_t k = 0; k < d.size; ++k) {
      step_lanes(lanes, static_cast<uint8_t>(d.text[k]));  // 256 independent lanes: vectorized
      mul_ *= kPrime;
    }
  }
  for (uint32_t l = 0; l < 256; ++l) add_[l] = lanes[l] - l * mul_;
}

GoChecksum::GoChecksum() : h_(2166136261u) {
  for (char c : std::string_view("([]uint8)[")) h_ = step(h_, c);
}

void GoChecksum::feed(std::string_view bytes) {
  uint32_t h = h_;
  for (char b : bytes) {
    const auto& d = kDecimal[static_cast<uint8_t>(b)];
    for (uint8_t k = first_ ? 1 : 0; k < d.size; ++k) h = step(h, d.text[k]);
    first_ = false;
  }
  h_ = h;
}

uint32_t GoChecksum::finish() const { return step(h_, ']'); }

uint32_t go_checksum(std::string_view bytes) {
  GoChecksum sum;
  sum.feed(bytes);
  return sum.finish();
}

}  // namespace nvdra::claims
