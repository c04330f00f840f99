#include "agent/claims/checkpoint/checkpoint_checksum.hpp"

#include "agent/claims/checkpoint/checkpoint_model.hpp"

#include <algorithm>

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

// Where the piece that starts at `from` ends: a JSON string value (a string not followed by ':')
// is a piece of its own, and so is the text between two of them (keys, punctuation, numbers).
// Any split gives the same span; this one makes the pieces that recur from claim to claim.
std::size_t piece_end(std::string_view b, std::size_t from) {
  const auto string_end = [&b](std::size_t open) {  // one past the closing quote
    std::size_t i = open + 1;
    while (i < b.size() && b[i] != '"') i += b[i] == '\\' ? 2 : 1;
    return std::min(i + 1, b.size());
  };
  std::size_t i = from;
  while (i < b.size()) {
    if (b[i] != '"') {
      ++i;
      continue;
    }
    const std::size_t end = string_end(i);
    const bool key = end < b.size() && b[end] == ':';
    if (key) {
      i = end;
    } else if (i == from) {
      return end;  // the value itself
    } else {
      return i;  // the text before the value
    }
  }
  return b.size();
}

void step_bytes(std::array<uint32_t, 256>& lanes, uint32_t& mul, std::string_view bytes) {
  for (char b : bytes) {
    const auto& d = kDecimal[static_cast<uint8_t>(b)];
    for (uint8_t k = 0; k < d.size; ++k) {
      step_lanes(lanes, static_cast<uint8_t>(d.text[k]));  // 256 independent lanes: vectorized
      mul *= kPrime;
    }
  }
}

}  // namespace

ChecksumSpan::ChecksumSpan(std::string_view bytes, SpanPieces* pieces) {
  std::array<uint32_t, 256> lanes;
  for (uint32_t l = 0; l < 256; ++l) lanes[l] = l;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t end = pieces ? piece_end(bytes, at) : bytes.size();
    const auto piece = bytes.substr(at, end - at);
    const ChecksumSpan* kept = pieces && piece.size() >= SpanPieces::kMinPiece ? pieces->find_or_note(piece) : nullptr;
    if (kept) {
      for (auto& h : lanes) h = kept->apply(h);
      mul_ *= kept->mul_;
    } else {
      step_bytes(lanes, mul_, piece);
    }
    at = end;
  }
  for (uint32_t l = 0; l < 256; ++l) add_[l] = lanes[l] - l * mul_;
}

SpanComposer::SpanComposer() {
  for (uint32_t l = 0; l < 256; ++l) lanes_[l] = l;
}

void SpanComposer::feed(std::string_view bytes) { step_bytes(lanes_, mul_, bytes); }

void SpanComposer::feed(const ChecksumSpan& span) {
  for (auto& h : lanes_) h = span.apply(h);
  mul_ *= span.mul_;
}

ChecksumSpan SpanComposer::finish() const {
  ChecksumSpan out;
  out.mul_ = mul_;
  for (uint32_t l = 0; l < 256; ++l) out.add_[l] = lanes_[l] - l * mul_;
  return out;
}

const ChecksumSpan* SpanPieces::find_or_note(std::string_view piece) {
  if (auto it = kept_.find(piece); it != kept_.end()) return &it->second;
  const std::size_t h = std::hash<std::string_view>{}(piece);
  if (seen_.erase(h) == 0) {  // the first sighting
    if (seen_.size() >= kMaxSeen) seen_.clear();
    seen_.insert(h);
    return nullptr;
  }
  if (kept_.size() >= kMaxKept) return nullptr;
  return &kept_.emplace(std::string(piece), ChecksumSpan(piece)).first->second;
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
