// A ResourceClaim as GET returns it (k8s/claim_lookup), for gpu.nvidia.com. Invariants: every
// device's base request is its request up to '/', and every config index points into the list.
#include <string_view>

#include "k8s/claim_lookup.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(claim) {
  const std::string_view json(reinterpret_cast<const char*>(data.data()), data.size());
  const nvdra::k8s::ClaimRef ref{"ns", "c1", "u-1"};
  auto parsed = nvdra::k8s::parse_claim_allocation(json, ref, "gpu.nvidia.com");
  if (!parsed.ok()) return nvdra::fuzz::Verdict::kRejected;
  for (const auto& d : parsed->devices) {
    NVDRA_FUZZ_CHECK(d.base_request == d.request.substr(0, d.request.find('/')));
    for (const auto& m : d.configs) NVDRA_FUZZ_CHECK(m.config < parsed->configs.size());
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
