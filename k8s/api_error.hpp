#pragma once
// ApiError / ApiResult<T>: what the API-server seam returns. Kubernetes answers failures with a
// `Status` object (code, reason, message); callers need those plus Retry-After to decide between
// relist (410), retry on fresh state (409), wait (429) and backoff (5xx, dropped connection).
// `to_error()` turns it into the project-wide nvdra::Error for anything above the seam.
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "agent/base/error.hpp"

namespace nvdra::k8s {

struct ApiError {
  int http_status = 0;   // 0: no HTTP answer (connect, TLS, dropped stream, local decode failure)
  std::string reason;    // Status.reason ("Conflict", "Expired", "NotFound", …) or a local reason
  std::string message;   // Status.message or a local explanation
  std::chrono::milliseconds retry_after{0};  // from the Retry-After header or Status.details

  bool not_found() const { return http_status == 404; }
  bool conflict() const { return http_status == 409; }
  // 410, or an in-stream ERROR event whose Status says the version is too old.
  bool gone() const { return http_status == 410 || reason == "Expired" || reason == "Gone"; }
  bool too_many_requests() const { return http_status == 429; }
  bool unauthorized() const { return http_status == 401; }

  // "HTTP 409 Conflict: <message>" or "<reason>: <message>" when there was no HTTP answer.
  std::string describe() const;
  nvdra::Error to_error() const;
};

// Local reasons (http_status 0).
inline constexpr std::string_view kReasonConnection = "ConnectionFailed";
inline constexpr std::string_view kReasonStreamEnded = "StreamEnded";
inline constexpr std::string_view kReasonEventTooLarge = "EventTooLarge";
inline constexpr std::string_view kReasonBadResponse = "BadResponse";

ApiError make_local_error(std::string_view reason, std::string message);

// Decodes a response body that should hold a metav1.Status. A body that is not one still gives an
// error with the HTTP status and the start of the body, so nothing is lost.
ApiError decode_status(int http_status, std::string_view body, std::chrono::milliseconds retry_after = {});

template <class T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const ApiError& error() const& { return std::get<1>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

struct Ok {};
using ApiStatus = ApiResult<Ok>;

}  // namespace nvdra::k8s
