#include "k8s/api_error.hpp"

#include <simdjson.h>

#include <string>

namespace nvdra::k8s {

std::string ApiError::describe() const {
  std::string out;
  if (http_status != 0) out = "HTTP " + std::to_string(http_status) + " ";
  out += reason.empty() ? std::string("Error") : reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

nvdra::Error ApiError::to_error() const {
  ErrorCode code = ErrorCode::kUnavailable;
  switch (http_status) {
    case 400:
    case 422: code = ErrorCode::kInvalidArgument; break;
    case 401:
    case 403: code = ErrorCode::kPermissionDenied; break;
    case 404: code = ErrorCode::kNotFound; break;
    case 409: code = reason == "AlreadyExists" ? ErrorCode::kAlreadyExists : ErrorCode::kFailedPrecondition; break;
    default: break;
  }
  return make_error(code, "kubernetes API: " + describe());
}

ApiError make_local_error(std::string_view reason, std::string message) {
  return ApiError{0, std::string(reason), std::move(message), {}};
}

ApiError decode_status(int http_status, std::string_view body, std::chrono::milliseconds retry_after) {
  ApiError err{http_status, {}, {}, retry_after};
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  bool decoded = false;
  if (!parser.iterate(padded).get(doc)) {
    simdjson::ondemand::object obj;
    if (!doc.get_object().get(obj)) {
      for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key)) break;
        std::string_view text;
        if (key == "reason" && !field.value().get_string().get(text)) {
          err.reason = text;
          decoded = true;
        } else if (key == "message" && !field.value().get_string().get(text)) {
          err.message = text;
          decoded = true;
        } else if (key == "code" && err.http_status == 0) {
          int64_t code = 0;
          if (!field.value().get_int64().get(code)) err.http_status = static_cast<int>(code);
        } else if (key == "details" && retry_after.count() == 0) {
          int64_t secs = 0;
          simdjson::ondemand::object details;
          if (!field.value().get_object().get(details) &&
              !details.find_field_unordered("retryAfterSeconds").get_int64().get(secs)) {
            err.retry_after = std::chrono::seconds(secs);
          }
        }
      }
    }
  }
  if (!decoded) {
    err.reason = http_status == 0 ? std::string(kReasonBadResponse) : "HTTPError";
    err.message = "response body is not a Status: " + std::string(body.substr(0, 200));
  }
  return err;
}

}  // namespace nvdra::k8s
