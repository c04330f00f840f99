#pragma once
// A Kubernetes resource.Quantity ("4Gi", "500M", "1.5e3"), parsed exactly (no floating point) so
// MPS pinned-memory limits round the way upstream's Quantity.Value() does. Grammar and error
// wording: k8s.io/apimachinery/pkg/api/resource/quantity.go.
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::claims {

struct Quantity {
  bool negative = false;
  uint64_t digits = 0;   // all significant digits, the decimal point removed
  int32_t exp10 = 0;     // value = ±digits · 10^exp10 · 2^exp2
  int32_t exp2 = 0;
  std::string text;      // as written
};

// Errors (kInvalidArgument) carry upstream's messages: "quantities must match the regular expression
// '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" or "unable to parse quantity's suffix".
Result<Quantity> parse_quantity(std::string_view text);

// Value() in bytes (rounded up like upstream), then whole MiB: floor(ceil(bytes) / 2^20).
// Negative quantities give a negative or zero result; out-of-range values are an error.
Result<int64_t> whole_mebibytes(const Quantity& q);

}  // namespace nvdra::claims
