// GET /version's answer (k8s/api_responses: parse_version_response), which picks the slice layout.
// Invariant: an accepted answer has a major version that at_least() can compare.
#include <string_view>

#include "k8s/api_responses.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(server_version) {
  const std::string_view body(reinterpret_cast<const char*>(data.data()), data.size());
  auto v = nvdra::k8s::parse_version_response(body);
  if (!v.ok()) return nvdra::fuzz::Verdict::kRejected;
  NVDRA_FUZZ_CHECK(v->major > 0 && v->minor >= 0);
  NVDRA_FUZZ_CHECK(v->at_least(v->major, v->minor));
  return nvdra::fuzz::Verdict::kAccepted;
}
