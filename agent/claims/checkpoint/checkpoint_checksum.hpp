#pragma once
// Upstream's checkpoint checksum — FNV-1a 32 over go-spew's "%#v" of the bytes,
// "([]uint8)[b0 b1 …]" — fed piece by piece, and ChecksumSpan: the effect of one span of bytes,
// precomputed so that a span hashed on every save (one claim's entry) costs a multiply and a table
// look-up instead of ~3.6 dependent multiplies per byte.
//
// Why a span can be precomputed: a FNV-1a step h' = (h ^ c) * P only changes the low byte of h
// before the multiply, so h ^ c = h + d where d depends on the low byte alone, and the low byte of
// h' depends on the low byte of h alone. Over a span, h_out = h_in * P^n + add[h_in & 0xFF], with
// n the characters fed and add[] the 256 outcomes, computed by running the span from each of the
// 256 low bytes (independent lanes, which the compiler vectorizes). Pure values; thread-safe.
//
// Spans compose: a span of pieces is its pieces' spans applied in turn to each of the 256 lanes, and
// applying one costs about what stepping 2-3 bytes does. SpanPieces keeps the spans of pieces that
// recur (the JSON between two string values of a claim's entry is the same in every claim), so a
// claim's span steps through its own values only. SpanComposer joins spans and bytes into one span:
// the encoder keeps one span per group of claims, so a save applies a few hundred spans, not one per
// claim and section.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace nvdra::claims {

class SpanPieces;
class SpanComposer;

class ChecksumSpan {
 public:
  ChecksumSpan() = default;  // the empty span
  // `bytes` as they appear after at least one other byte of the stream (each preceded by a space).
  // With `pieces`, the pieces of `bytes` (split around its JSON string values) seen before come
  // from there; the result is the same.
  explicit ChecksumSpan(std::string_view bytes, SpanPieces* pieces = nullptr);
  uint32_t apply(uint32_t h) const { return h * mul_ + add_[h & 0xFFu]; }

 private:
  friend class SpanComposer;
  uint32_t mul_ = 1;
  std::array<uint32_t, 256> add_{};
};

// The span of spans and bytes fed one after another (the bytes, too, after at least one other byte
// of the stream): what ChecksumSpan of their concatenation would be, at ~256 steps per span fed.
class SpanComposer {
 public:
  SpanComposer();
  void feed(std::string_view bytes);
  void feed(const ChecksumSpan& span);
  ChecksumSpan finish() const;

 private:
  std::array<uint32_t, 256> lanes_;  // where each starting low byte has got to
  uint32_t mul_ = 1;
};

// The spans of pieces seen at least twice, at most kMaxKept of them (a piece is kept at its second
// sighting, so a claim's own values, seen once, are not). Not thread-safe: one per encoder.
class SpanPieces {
 public:
  static constexpr std::size_t kMaxKept = 64;      // ~66 KiB
  static constexpr std::size_t kMaxSeen = 512;     // hashes of pieces seen once; forgotten when full
  static constexpr std::size_t kMinPiece = 8;      // shorter pieces are cheaper to step through
  // The span of `piece` when it was seen before, else null (and it is noted).
  const ChecksumSpan* find_or_note(std::string_view piece);
  std::size_t kept() const { return kept_.size(); }

 private:
  // Looked up by the piece's view: no string is made for a lookup (every piece of every span).
  struct ViewHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, ChecksumSpan, ViewHash, std::equal_to<>> kept_;
  std::unordered_set<std::size_t> seen_;
};

class GoChecksum {
 public:
  GoChecksum();  // has fed "([]uint8)["
  void feed(std::string_view bytes);
  // Precondition: a byte was fed before (the span's first byte is preceded by a space).
  void feed(const ChecksumSpan& span) { h_ = span.apply(h_); }
  uint32_t finish() const;  // the checksum of everything fed, then "]"

 private:
  uint32_t h_;
  bool first_ = true;
};

}  // namespace nvdra::claims
