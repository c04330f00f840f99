// The AdmissionReview codec and decision (simdjson in, Boost.JSON out), after upstream's
// cmd/webhook/main.go: the same refusals (400 for a body that is no AdmissionReview, a BadRequest
// status for an object of the wrong kind or shape) and the same denial message.
#include "agent/admission/admission_review.hpp"

#include <simdjson.h>

#include <array>
#include <boost/json.hpp>

#include "agent/admission/config_check.hpp"

namespace nvdra::admission {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

constexpr std::string_view kReviewApiVersion = "admission.k8s.io/v1";
constexpr std::array<std::string_view, 3> kVersions = {"v1", "v1beta1", "v1beta2"};
constexpr std::string_view kSupported =
    "[{resource.k8s.io v1 resourceclaims} {resource.k8s.io v1beta1 resourceclaims} {resource.k8s.io v1beta2 "
    "resourceclaims} {resource.k8s.io v1 resourceclaimtemplates} {resource.k8s.io v1beta1 resourceclaimtemplates} "
    "{resource.k8s.io v1beta2 resourceclaimtemplates}]";

std::string_view string_at(object obj, std::string_view key) {
  std::string_view out;
  element el;
  if (!obj[key].get(el)) (void)el.get(out);
  return out;
}

ReviewReply bad_request(std::string message) {
  return {Verdict::kBadRequest, "failed to read AdmissionReview from request body: " + std::move(message), 0};
}

ReviewReply respond(std::string_view uid, bool allowed, const std::string& message, std::string_view reason,
                    std::size_t checked) {
  boost::json::object response{{"uid", uid}, {"allowed", allowed}};
  if (!allowed)
    response["status"] = boost::json::object{{"metadata", boost::json::object{}}, {"message", message}, {"reason", reason}};
  const boost::json::object out{
      {"apiVersion", kReviewApiVersion}, {"kind", "AdmissionReview"}, {"response", std::move(response)}};
  return {allowed ? Verdict::kAllowed : Verdict::kDenied, boost::json::serialize(out), checked};
}

// Which spec holds the claim's devices: "spec" of a claim, "spec.spec" of a template; empty when
// the resource is none of the six the webhook is registered for.
std::string spec_path(object request) {
  object resource;
  if (request["resource"].get(resource)) return {};
  const auto version = string_at(resource, "version");
  if (string_at(resource, "group") != "resource.k8s.io" ||
      std::find(kVersions.begin(), kVersions.end(), version) == kVersions.end())
    return {};
  const auto name = string_at(resource, "resource");
  if (name == "resourceclaims") return "spec";
  if (name == "resourceclaimtemplates") return "spec.spec";
  return {};
}

std::string describe_resource(object request) {
  object resource;
  if (request["resource"].get(resource)) return "{  }";
  return "{" + std::string(string_at(resource, "group")) + " " + std::string(string_at(resource, "version")) + " " +
         std::string(string_at(resource, "resource")) + "}";
}

// The spec at `path` ("spec" or "spec.spec") of the object; nullopt when absent or null.
Result<std::optional<element>> spec_of(element object_el, const std::string& path) {
  std::optional<element> at = object_el;
  std::string walked = "object";
  for (std::size_t depth = path == "spec" ? 1 : 2; depth > 0 && at; --depth) {
    object obj;
    if (at->get(obj)) return Error{ErrorCode::kInvalidArgument, walked + ": must be an object"};
    walked = walked == "object" ? "spec" : walked + ".spec";
    element next;
    if (obj["spec"].get(next) || next.is_null()) at.reset();
    else at = next;
  }
  return at;
}

ReviewReply decide(object request, const claims::ConfigGates& gates) {
  const auto uid = string_at(request, "uid");
  const auto path = spec_path(request);
  if (path.empty())
    return respond(uid, false,
                   "expected resource to be one of " + std::string(kSupported) + ", got " + describe_resource(request),
                   "BadRequest", 0);
  const auto operation = string_at(request, "operation");
  if (operation != "CREATE" && operation != "UPDATE") return respond(uid, true, {}, {}, 0);  // nothing to admit
  element object_el;
  if (request["object"].get(object_el) || object_el.is_null())
    return respond(uid, false, "request.object is missing for " + std::string(operation), "BadRequest", 0);
  std::vector<PlacedConfig> configs;
  auto spec = spec_of(object_el, path);
  Status shape = !spec ? Status(spec.error()) : *spec ? collect_configs(**spec, path, configs) : Status{};
  if (!shape) return respond(uid, false, "could not decode the object: " + shape.error().message, "BadRequest", 0);
  const auto problems = check_configs(configs, gates);
  if (!problems.empty()) return respond(uid, false, denial_message(problems), "Invalid", configs.size());
  return respond(uid, true, {}, {}, configs.size());
}

}  // namespace

ReviewReply review(std::string_view body, const claims::ConfigGates& gates) {
  if (body.size() > kMaxReviewBytes)
    return bad_request("the body is " + std::to_string(body.size()) + " bytes, more than the " +
                       std::to_string(kMaxReviewBytes) + " accepted");
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(body.data(), body.size()).get(root))
    return bad_request(std::string("request could not be decoded: ") + simdjson::error_message(err));
  object review_obj;
  if (root.get(review_obj)) return bad_request("request could not be decoded: the body is not a JSON object");
  const auto api_version = string_at(review_obj, "apiVersion");
  const auto kind = string_at(review_obj, "kind");
  if (api_version != kReviewApiVersion || kind != "AdmissionReview")
    return bad_request("unsupported group version kind: " + std::string(api_version) + ", Kind=" + std::string(kind) +
                       " (expected admission.k8s.io/v1, Kind=AdmissionReview)");
  object request;
  if (review_obj["request"].get(request)) return bad_request("the AdmissionReview has no request object");
  element uid;
  std::string_view uid_text;
  if (request["uid"].get(uid) || uid.get(uid_text) || uid_text.empty())
    return bad_request("request.uid is missing or not a string");
  return decide(request, gates);
}

}  // namespace nvdra::admission
