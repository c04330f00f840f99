// ComputeDomain and ResourceClaimTemplate objects the controller reads (agent/controller/
// compute_domain). Invariants: a decoded ComputeDomain takes and drops a finalizer by
// read-modify-write and still decodes with its name, and the template it renders decodes.
#include <algorithm>
#include <string_view>

#include "agent/controller/compute_domain.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(compute_domain) {
  using namespace nvdra::controller;
  const std::string_view json(reinterpret_cast<const char*>(data.data()), data.size());
  (void)decode_claim_template(json);
  auto cd = decode_compute_domain(json);
  if (!cd.ok()) return nvdra::fuzz::Verdict::kRejected;
  constexpr std::string_view kF = "fuzz.nvidia.com/finalizer";
  auto with = with_finalizer(json, kF, true);
  NVDRA_FUZZ_CHECK(with.ok());
  if (with.ok()) {
    auto back = decode_compute_domain(*with);
    NVDRA_FUZZ_CHECK(back.ok());
    if (back.ok()) {
      NVDRA_FUZZ_CHECK(back->name == cd->name && back->uid == cd->uid);
      NVDRA_FUZZ_CHECK(std::count(back->finalizers.begin(), back->finalizers.end(), kF) == 1);
    }
    auto without = with_finalizer(*with, kF, false);
    NVDRA_FUZZ_CHECK(without.ok());
    if (without.ok()) {
      auto gone = decode_compute_domain(*without);
      NVDRA_FUZZ_CHECK(gone.ok());
      if (gone.ok()) NVDRA_FUZZ_CHECK(std::count(gone->finalizers.begin(), gone->finalizers.end(), kF) == 0);
    }
  }
  NVDRA_FUZZ_CHECK(with_status(json, "Ready").ok());
  if (!cd->rct_name.empty()) NVDRA_FUZZ_CHECK(decode_claim_template(render_workload_rct(*cd)).ok());
  return nvdra::fuzz::Verdict::kAccepted;
}
