// The webhook's AdmissionReview decoder and decision (agent/admission/admission_review). Invariants:
// every reply that is not a plain-text refusal is a response AdmissionReview whose `allowed`
// matches the verdict and whose denial carries a message; the decision does not depend on the
// call (same input, same reply). Accepted: allowed with every gate on.
#include <boost/json.hpp>

#include <string_view>

#include "agent/admission/admission_review.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(admission_review) {
  using namespace nvdra::admission;
  const std::string_view body(reinterpret_cast<const char*>(data.data()), data.size());
  const nvdra::claims::ConfigGates gates{true, true, true, true};
  const auto reply = review(body, gates);
  NVDRA_FUZZ_CHECK(review(body, gates).body == reply.body);
  if (reply.verdict == Verdict::kBadRequest) {
    NVDRA_FUZZ_CHECK(!reply.body.empty());
    return nvdra::fuzz::Verdict::kRejected;
  }
  boost::system::error_code ec;
  const auto out = boost::json::parse(reply.body, ec);
  NVDRA_FUZZ_CHECK(!ec && out.is_object());
  const auto* response = out.as_object().if_contains("response");
  NVDRA_FUZZ_CHECK(response != nullptr && response->is_object());
  const auto* allowed = response->as_object().if_contains("allowed");
  NVDRA_FUZZ_CHECK(allowed != nullptr && allowed->is_bool());
  NVDRA_FUZZ_CHECK(allowed->as_bool() == (reply.verdict == Verdict::kAllowed));
  if (!allowed->as_bool()) NVDRA_FUZZ_CHECK(response->as_object().if_contains("status") != nullptr);
  return nvdra::fuzz::verdict(reply.verdict == Verdict::kAllowed);
}
