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
#include <array>
#include <cstdint>
#include <string_view>

namespace nvdra::claims {

class ChecksumSpan {
 public:
  ChecksumSpan() = default;  // the empty span
  // `bytes` as they appear after at least one other byte of the stream (each preceded by a space).
  explicit ChecksumSpan(std::string_view bytes);
  uint32_t apply(uint32_t h) const { return h * mul_ + add_[h & 0xFFu]; }

 private:
  uint32_t mul_ = 1;
  std::array<uint32_t, 256> add_{};
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
