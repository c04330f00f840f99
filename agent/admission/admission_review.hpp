#pragma once
// admission.k8s.io/v1 AdmissionReview in, AdmissionReview out: the webhook's whole decision, with
// no I/O (the HTTPS server only moves bytes). For CREATE and UPDATE of resourceclaims and
// resourceclaimtemplates of resource.k8s.io v1, v1beta1 and v1beta2, every opaque config of
// gpu.nvidia.com and compute-domain.nvidia.com is checked as prepare checks it (config_check.hpp);
// the denial is upstream's "<n> configs failed to validate: …" with reason Invalid.
//
// Safe from any thread.
#include <cstddef>
#include <string>
#include <string_view>

#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::admission {

// The API server caps a request body at 3 MiB; an UPDATE's review carries the object twice
// (object, oldObject) plus its envelope. Bigger bodies are refused unread (HTTP 413).
inline constexpr std::size_t kMaxReviewBytes = 7 * 1024 * 1024;

enum class Verdict {
  kAllowed,     // a response with allowed: true
  kDenied,      // a response with allowed: false (bad configs, or an object of the wrong shape)
  kBadRequest,  // the body is no admission.k8s.io/v1 AdmissionReview: HTTP 400, plain text
};

struct ReviewReply {
  Verdict verdict = Verdict::kBadRequest;
  std::string body;  // the response AdmissionReview (JSON), or the refusal's text for kBadRequest
  std::size_t configs_checked = 0;
};

ReviewReply review(std::string_view body, const claims::ConfigGates& gates);

}  // namespace nvdra::admission
