// The /openapi/v3 index (k8s/server_features: openapi_document_path), which names the
// resource.k8s.io/v1 document the publisher reads next. Invariant: none beyond no crash and a
// verdict; a path found is the string the index gave.
#include <string_view>

#include "k8s/server_features.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(openapi_index) {
  const std::string_view index(reinterpret_cast<const char*>(data.data()), data.size());
  auto path = nvdra::k8s::openapi_document_path(index, "resource.k8s.io/v1");
  if (!path.ok()) return nvdra::fuzz::Verdict::kRejected;
  NVDRA_FUZZ_CHECK(path->size() <= index.size());
  return nvdra::fuzz::Verdict::kAccepted;
}
