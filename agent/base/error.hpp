#pragma once
// nvdra::Error — the one error value that crosses seams. Messages are for operators: they name the
// claim, the field and the allowed values, so the caller can log or return them unchanged.
#include <string>
#include <utility>

namespace nvdra {

enum class ErrorCode {
  kInvalidArgument,   // bad input from a user or peer (config, claim, flag)
  kNotFound,          // the thing asked for does not exist
  kAlreadyExists,
  kFailedPrecondition,  // the node is not in a state where this can work (permanent until fixed)
  kUnavailable,       // transient: retry may succeed
  kPermissionDenied,
  kCancelled,
  kInternal,          // a bug or an unexpected library failure
};

const char* to_string(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string claim;  // "ns/name (uid)" when the error belongs to one claim
  std::string field;  // dotted path of the offending field, if any

  // The operator-facing sentence: "claim ns/name (uid): field x.y: message".
  std::string describe() const;
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message), {}, {}}; }

inline const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kAlreadyExists: return "AlreadyExists";
    case ErrorCode::kFailedPrecondition: return "FailedPrecondition";
    case ErrorCode::kUnavailable: return "Unavailable";
    case ErrorCode::kPermissionDenied: return "PermissionDenied";
    case ErrorCode::kCancelled: return "Cancelled";
    case ErrorCode::kInternal: return "Internal";
  }
  return "Unknown";
}

inline std::string Error::describe() const {
  std::string out;
  if (!claim.empty()) out += "claim " + claim + ": ";
  if (!field.empty()) out += "field " + field + ": ";
  out += message;
  return out;
}

}  // namespace nvdra
