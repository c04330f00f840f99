// `nvdractl validate`'s reader (agent/admission/manifest_check): YAML or JSON streams of manifests.
// Invariants: a finding belongs to a counted document and names a path; no more findings than
// configs checked plus spec-shape errors; the same text gives the same report. Accepted: read, with
// at least one config and none refused.
#include <string_view>

#include "agent/admission/manifest_check.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(manifest_check) {
  using namespace nvdra::admission;
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  const nvdra::claims::ConfigGates gates{true, true, true, true};
  const auto report = check_manifests(text, gates);
  const auto again = check_manifests(text, gates);
  NVDRA_FUZZ_CHECK(report.ok() == again.ok());
  if (!report.ok()) return nvdra::fuzz::Verdict::kRejected;
  NVDRA_FUZZ_CHECK(report->findings.size() == again->findings.size());
  for (const auto& f : report->findings) {
    NVDRA_FUZZ_CHECK(f.document >= 1);
    NVDRA_FUZZ_CHECK(!f.message.empty());
  }
  return nvdra::fuzz::verdict(report->configs > 0 && report->findings.empty());
}
