// A coordination.k8s.io Lease (k8s/lease_codec). Invariant: a decoded record encodes and decodes
// to itself under the same name.
#include <string_view>

#include "k8s/lease_codec.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(lease) {
  const std::string_view json(reinterpret_cast<const char*>(data.data()), data.size());
  auto lease = nvdra::k8s::decode_lease(json);
  if (!lease.ok()) return nvdra::fuzz::Verdict::kRejected;
  const auto& meta = lease->meta;
  auto again = nvdra::k8s::decode_lease(nvdra::k8s::encode_lease(meta.ns, meta.name, meta.resource_version, lease->record));
  NVDRA_FUZZ_CHECK(again.ok());
  if (again.ok()) {
    NVDRA_FUZZ_CHECK(again->record == lease->record);
    NVDRA_FUZZ_CHECK(again->meta.name == meta.name && again->meta.ns == meta.ns);
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
