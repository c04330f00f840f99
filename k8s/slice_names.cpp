#include "k8s/slice_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace nvdra::k8s {

std::size_t slice_index_length(std::size_t slices) {
  // Go formats slices-1 = -1 as "-1" for an empty pool: two characters, below the minimum anyway.
  const std::size_t digits = slices == 0 ? 2 : fmt::format("{:x}", slices - 1).size();
  return std::max(kSliceIndexMinLength, digits);
}

std::string slice_generate_name(std::size_t index, std::size_t length, std::string_view driver,
                                std::string_view node) {
  return fmt::format("{:0{}x}-{}-{}-", index, length, driver, node);
}

std::optional<std::size_t> decode_slice_index(std::string_view name, std::size_t length) {
  const auto dash = name.find('-');
  if (dash == std::string_view::npos || dash != length) return std::nullopt;
  std::string_view digits = name.substr(0, dash);
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);  // ParseInt takes a sign
  if (digits.empty()) return std::nullopt;
  // ParseInt(…, 16, 0): a 64-bit signed result; anything larger is an error there.
  constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
  unsigned long long value = 0;
  for (char c : digits) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return std::nullopt;
    if (value > (kMax - static_cast<unsigned>(d)) / 16) return std::nullopt;
    value = value * 16 + static_cast<unsigned>(d);
  }
  if (value > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  return static_cast<std::size_t>(value);
}

}  // namespace nvdra::k8s
