#pragma once
// Operations awaited with as_tuple report cancellation as an error code instead of throwing; a
// coroutine that then loops would miss the one cancellation signal it gets. Call this after each
// such wait so that cancellation always ends the coroutine (with operation_aborted).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

namespace nvdra::k8s {

inline boost::asio::awaitable<void> throw_if_cancelled() {
  auto state = co_await boost::asio::this_coro::cancellation_state;
  if (state.cancelled() != boost::asio::cancellation_type::none) {
    throw boost::system::system_error(boost::asio::error::operation_aborted);
  }
}

}  // namespace nvdra::k8s
