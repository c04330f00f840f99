// libFuzzer target for the opaque config decoder (built with -DNVDRA_FUZZ=ON and clang). The unit
// test OpaqueConfigFuzzSeeds.EverySeedRunsWithoutCrashing links this file too and runs the corpus.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/claims/opaque_config.hpp"
#include "agent/claims/sharing_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nvdra::claims;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto strict = decode_opaque_config(json, DecodeMode::kStrict);
  auto lenient = decode_opaque_config(json, DecodeMode::kLenient);
  // Whatever strict mode accepts, lenient mode accepts identically.
  if (strict.ok() && (!lenient.ok() || !(*strict == *lenient))) std::abort();
  if (!lenient.ok()) return 0;
  for (bool gates : {false, true}) {
    OpaqueConfig config = *lenient;
    const ConfigGates g{gates, gates, gates, gates};
    normalize(config, g);
    OpaqueConfig again = config;
    normalize(again, g);
    if (!(again == config)) std::abort();  // Normalize is idempotent
    if (validate(config, g).ok()) (void)plan_sharing(config, {"GPU-b", "GPU-a"});
  }
  return 0;
}
