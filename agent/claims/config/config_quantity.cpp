#include "agent/claims/config/config_quantity.hpp"

#include <cctype>

namespace nvdra::claims {
namespace {

constexpr std::string_view kFormatWrong =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

Error format_error(std::string_view text) {
  return Error{ErrorCode::kInvalidArgument, std::string(kFormatWrong) + " (got \"" + std::string(text) + "\")", {}, {}};
}

Error suffix_error(std::string_view text) {
  return Error{ErrorCode::kInvalidArgument, "unable to parse quantity's suffix (got \"" + std::string(text) +
                                                "\"; allowed: Ki Mi Gi Ti Pi Ei, n u m k M G T P E, e<exp>)",
               {}, {}};
}

bool parse_suffix(std::string_view s, int32_t& exp10, int32_t& exp2) {
  struct S {
    std::string_view name;
    int32_t e10, e2;
  };
  static constexpr S kSuffixes[] = {{"", 0, 0},   {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0},  {"k", 3, 0},
                                    {"M", 6, 0},  {"G", 9, 0},  {"T", 12, 0}, {"P", 15, 0},  {"E", 18, 0},
                                    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50},
                                    {"Ei", 0, 60}};
  for (const auto& k : kSuffixes)
    if (k.name == s) {
      exp10 += k.e10;
      exp2 += k.e2;
      return true;
    }
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E')) return false;
  std::string_view e = s.substr(1);
  bool neg = false;
  if (e[0] == '+' || e[0] == '-') {
    neg = e[0] == '-';
    e.remove_prefix(1);
  }
  if (e.empty() || e.size() > 4) return false;
  int32_t v = 0;
  for (char c : e) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  exp10 += neg ? -v : v;
  return true;
}

}  // namespace

Result<Quantity> parse_quantity(std::string_view text) {
  Quantity q;
  q.text = std::string(text);
  std::string_view s = text;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    q.negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t i = 0;
  bool any_digit = false, seen_point = false;
  int significant = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (seen_point) return format_error(text);
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    any_digit = true;
    if (q.digits == 0 && c == '0') {
      if (seen_point) --q.exp10;
      continue;
    }
    if (significant >= 18) {  // beyond uint64 precision: keep the magnitude, drop the digit
      if (!seen_point) ++q.exp10;
      continue;
    }
    q.digits = q.digits * 10 + static_cast<uint64_t>(c - '0');
    ++significant;
    if (seen_point) --q.exp10;
  }
  if (!any_digit) return format_error(text);
  if (!parse_suffix(s.substr(i), q.exp10, q.exp2)) {
    // Characters outside the regular expression's classes are a format error, the rest a suffix error.
    for (char c : s.substr(i))
      if (std::string_view("eEinumkKMGTP+-0123456789").find(c) == std::string_view::npos) return format_error(text);
    return suffix_error(text);
  }
  return q;
}

Result<int64_t> whole_mebibytes(const Quantity& q) {
  using u128 = unsigned __int128;
  const u128 kLimit = static_cast<u128>(1) << 100;
  auto range_error = [&] {
    return Error{ErrorCode::kInvalidArgument, "quantity " + q.text + " is out of range", {}, {}};
  };
  u128 num = q.digits, den = 1;
  for (int32_t e = q.exp10; e > 0; --e) {
    num *= 10;
    if (num > kLimit) return range_error();
  }
  for (int32_t e = q.exp10; e < 0; ++e) {
    den *= 10;
    if (den > kLimit) return static_cast<int64_t>(0);  // far below one byte
  }
  if (q.exp2 > 0) {
    if (q.exp2 > 60 || num > (kLimit >> q.exp2)) return range_error();
    num <<= q.exp2;
  }
  const u128 bytes = (num + den - 1) / den;  // Value() rounds up to whole bytes
  const u128 mib = bytes >> 20;
  if (mib > static_cast<u128>(INT64_MAX)) return range_error();
  // A negative quantity's Value() rounds towards +inf too; only its sign matters to callers.
  if (q.negative) return bytes == 0 ? int64_t{0} : -static_cast<int64_t>(mib == 0 ? 1 : mib);
  return static_cast<int64_t>(mib);
}

}  // namespace nvdra::claims
