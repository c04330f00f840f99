#pragma once
// A slot in a JSON document for text serialized elsewhere (a claim's member kept from an earlier
// save, a claim spec's edits shared by every claim): the document is written with the string
// kJsonSlotValue where the text goes, and that string's rendering, kJsonSlotText, is then replaced
// by the text. A JSON writer must escape U+0001 (a control character), and Boost.JSON writes it as
// below; each user says why no other value of its document renders the same.
#include <string_view>

namespace nvdra {

inline constexpr std::string_view kJsonSlotValue = "\x01";
inline constexpr std::string_view kJsonSlotText = "\"\\u0001\"";

}  // namespace nvdra
