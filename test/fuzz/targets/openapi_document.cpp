// A resource.k8s.io/v1 OpenAPI v3 document (k8s/server_features: served_fields_from_openapi): which
// ResourceSlice fields the server serves. Invariant: reading it twice gives the same answer.
#include <string_view>

#include "k8s/server_features.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(openapi_document) {
  const std::string_view document(reinterpret_cast<const char*>(data.data()), data.size());
  auto served = nvdra::k8s::served_fields_from_openapi(document);
  if (!served.ok()) return nvdra::fuzz::Verdict::kRejected;
  auto again = nvdra::k8s::served_fields_from_openapi(document);
  NVDRA_FUZZ_CHECK(again.ok() && *again == *served);
  return nvdra::fuzz::Verdict::kAccepted;
}
