#pragma once
// Result<T>: a value or an nvdra::Error. C++20 on g++ 12 has no std::expected; this is the small
// subset we use. Accessing the wrong alternative is a bug and throws std::logic_error.
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "agent/base/error.hpp"

namespace nvdra {

template <class T>
class [[nodiscard]] Result {
 public:
  // Asio's co_spawn needs awaitable results to be default-constructible; an unset Result is an
  // internal error, never a silent success.
  Result() : v_(std::in_place_index<1>, Error{ErrorCode::kInternal, "result was never set", {}, {}}) {}
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}        // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}    // NOLINT: implicit by design

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { check(true); return std::get<0>(v_); }
  const T& value() const& { check(true); return std::get<0>(v_); }
  T&& value() && { check(true); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& { check(false); return std::get<1>(v_); }
  Error&& error() && { check(false); return std::get<1>(std::move(v_)); }

 private:
  void check(bool want_value) const {
    if (ok() != want_value) throw std::logic_error(want_value ? "Result has no value" : "Result has no error");
  }
  std::variant<T, Error> v_;
};

// Result<void>: success or an error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& {
    if (ok_) throw std::logic_error("Result has no error");
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace nvdra
