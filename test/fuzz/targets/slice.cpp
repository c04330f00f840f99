// A ResourceSlice read back from the API server (k8s/slice_codec). Invariant: what decodes,
// encodes and decodes again to the same slice.
#include <string_view>

#include "k8s/slice_codec.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(slice) {
  const std::string_view json(reinterpret_cast<const char*>(data.data()), data.size());
  auto slice = nvdra::k8s::decode_slice(json);
  if (!slice.ok()) return nvdra::fuzz::Verdict::kRejected;
  auto again = nvdra::k8s::decode_slice(nvdra::k8s::encode_slice(*slice));
  NVDRA_FUZZ_CHECK(again.ok());
  if (again.ok()) {
    NVDRA_FUZZ_CHECK(again->content == slice->content);
    NVDRA_FUZZ_CHECK(again->owners == slice->owners);
    NVDRA_FUZZ_CHECK(again->driver == slice->driver && again->node_name == slice->node_name);
    NVDRA_FUZZ_CHECK(again->pool_name == slice->pool_name && again->generation == slice->generation);
    NVDRA_FUZZ_CHECK(again->resource_slice_count == slice->resource_slice_count);
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
