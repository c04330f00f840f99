// A claim's opaque driver config (agent/claims/opaque_config). Invariants: whatever strict mode
// accepts, lenient mode accepts identically; normalize() is idempotent; a valid config plans.
#include <string_view>

#include "agent/claims/config/opaque_config.hpp"
#include "agent/claims/sharing/sharing_plan.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(opaque_config) {
  using namespace nvdra::claims;
  const std::string_view json(reinterpret_cast<const char*>(data.data()), data.size());
  auto strict = decode_opaque_config(json, DecodeMode::kStrict);
  auto lenient = decode_opaque_config(json, DecodeMode::kLenient);
  NVDRA_FUZZ_CHECK(!strict.ok() || (lenient.ok() && *strict == *lenient));
  if (!lenient.ok()) return nvdra::fuzz::Verdict::kRejected;
  bool valid = false;
  for (bool gates : {false, true}) {
    OpaqueConfig config = *lenient;
    const ConfigGates g{gates, gates, gates, gates};
    normalize(config, g);
    OpaqueConfig again = config;
    normalize(again, g);
    NVDRA_FUZZ_CHECK(again == config);
    if (validate(config, g).ok()) {
      valid = true;
      (void)plan_sharing(config, {"GPU-b", "GPU-a"});
    }
  }
  // Accepted: strict decoding and validation with every gate on, as a claim's config must pass.
  return nvdra::fuzz::verdict(strict.ok() && valid);
}
