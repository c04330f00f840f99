#pragma once
// Cutting text to a byte budget without splitting a UTF-8 sequence: a cut inside a character leaves
// bytes that are not UTF-8, which a JSON writer passes through and every JSON reader then refuses
// (an Event's note, an AdmissionReview's denial quoting the input).
#include <cstddef>
#include <string>

namespace nvdra {

// `text` cut to at most `max` bytes, before the first byte of the character the cut would split.
inline std::string truncate_utf8(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max;
  // Step back over continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

}  // namespace nvdra
