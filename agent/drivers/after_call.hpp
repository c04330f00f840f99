#pragma once
// after_call — what a claim-handler decorator (metrics, heap trimming) runs once the inner call ended,
// whether it returned or threw (cancellation included); the result or the exception then goes on
// unchanged. `after` gets the result, or nullptr when the call threw.
#include <boost/asio/awaitable.hpp>

#include <exception>
#include <optional>
#include <utility>

namespace nvdra::drivers {

template <class T, class After>
boost::asio::awaitable<T> after_call(boost::asio::awaitable<T> call, After after) {
  std::optional<T> result;
  std::exception_ptr failure;
  try {
    result.emplace(co_await std::move(call));
  } catch (...) {
    failure = std::current_exception();
  }
  after(result ? &*result : nullptr);
  if (failure) std::rethrow_exception(failure);
  co_return std::move(*result);
}

}  // namespace nvdra::drivers
