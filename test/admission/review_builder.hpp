#pragma once
// AdmissionReviews as the API server sends them, built with Boost.JSON for the tests.
#include <boost/json.hpp>

#include <string>
#include <vector>

namespace nvdra::admission::test {

// One spec.devices.config entry with opaque parameters.
inline boost::json::value opaque(std::string_view driver, boost::json::value parameters) {
  return boost::json::object{{"requests", boost::json::array{"gpu"}},
                             {"opaque", boost::json::object{{"driver", driver}, {"parameters", std::move(parameters)}}}};
}

inline boost::json::value gpu_config(boost::json::object body, std::string_view kind = "GpuConfig") {
  body["apiVersion"] = "resource.nvidia.com/v1beta1";
  body["kind"] = kind;
  return body;
}

// A ResourceClaimSpec with the given configs.
inline boost::json::object claim_spec(std::vector<boost::json::value> configs) {
  boost::json::array list(configs.begin(), configs.end());
  return boost::json::object{
      {"devices", boost::json::object{{"requests", boost::json::array{boost::json::object{{"name", "gpu"}}}},
                                      {"config", std::move(list)}}}};
}

// The review of `resource` (resourceclaims | resourceclaimtemplates) in `version`.
inline std::string review_of(std::string_view resource, std::string_view version, boost::json::object spec,
                             std::string_view operation = "CREATE") {
  const bool is_template = resource == "resourceclaimtemplates";
  boost::json::object object{{"apiVersion", "resource.k8s.io/" + std::string(version)},
                             {"kind", is_template ? "ResourceClaimTemplate" : "ResourceClaim"},
                             {"metadata", boost::json::object{{"name", "c"}, {"namespace", "default"}}}};
  if (is_template) object["spec"] = boost::json::object{{"spec", std::move(spec)}};
  else object["spec"] = std::move(spec);
  boost::json::object request{
      {"uid", "0d1c5b3e-1111-4a8e-9e1e-2b9d5a6f7c80"},
      {"kind", boost::json::object{{"group", "resource.k8s.io"}, {"version", version},
                                   {"kind", is_template ? "ResourceClaimTemplate" : "ResourceClaim"}}},
      {"resource", boost::json::object{{"group", "resource.k8s.io"}, {"version", version}, {"resource", resource}}},
      {"operation", operation},
      {"object", std::move(object)}};
  return boost::json::serialize(boost::json::object{
      {"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", std::move(request)}});
}

}  // namespace nvdra::admission::test
