#pragma once
// `nvdractl validate -f FILE`: checks the opaque configs in YAML or JSON manifests offline, with the
// webhook's and prepare's own code (agent/admission). Exit status: 0 every config valid, 1 at least
// one config refused, 2 usage (a bad --feature-gates), 5 the input could not be read or parsed.
#include <cstdio>
#include <string>

namespace nvdra::ctl {

inline constexpr int kValidateRefused = 1;
inline constexpr int kValidateUsage = 2;
inline constexpr int kValidateUnreadable = 5;

struct ValidateArgs {
  std::string file;           // "-" for stdin
  std::string feature_gates;  // as the agent's --feature-gates
};

// Prints each refused config (file, document, object, field, message) to `out`, a summary to `err`.
int run_validate(const ValidateArgs& args, std::FILE* out, std::FILE* err);

}  // namespace nvdra::ctl
