// The checkpoint file's bytes (agent/claims/checkpoint_model). Invariant: a decoded checkpoint
// encodes and decodes to itself.
#include <string_view>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(checkpoint) {
  const std::string_view bytes(reinterpret_cast<const char*>(data.data()), data.size());
  auto checkpoint = nvdra::claims::decode_checkpoint(bytes, "fuzz/checkpoint.json");
  if (!checkpoint.ok()) return nvdra::fuzz::Verdict::kRejected;
  auto again = nvdra::claims::decode_checkpoint(nvdra::claims::encode_checkpoint(*checkpoint), "again.json");
  NVDRA_FUZZ_CHECK(again.ok());
  if (again.ok()) NVDRA_FUZZ_CHECK(*again == *checkpoint);
  return nvdra::fuzz::Verdict::kAccepted;
}
