// The ServedFieldsCache file (k8s/served_fields_codec), read at every start from the plugin data
// directory. Invariant: an entry read back is written again as the same entry.
#include <string_view>

#include "k8s/served_fields_codec.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(served_fields) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  auto entry = nvdra::k8s::decode_served_fields(text);
  if (!entry) return nvdra::fuzz::Verdict::kRejected;
  NVDRA_FUZZ_CHECK(nvdra::k8s::decode_served_fields(nvdra::k8s::encode_served_fields(*entry)) == entry);
  return nvdra::fuzz::Verdict::kAccepted;
}
