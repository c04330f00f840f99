#pragma once
// StreamWriter::write — kept apart so rpc_bridge.hpp reads as the protocol, this as the mechanics.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/kubelet/rpc_bridge.hpp"

namespace nvdra::kubelet::rpc {

template <class Response>
boost::asio::awaitable<bool> StreamWriter<Response>::write(Response message) {
  if (!ok_) co_return false;
  message_ = std::move(message);
  pending_ = true;
  write_done_.expires_at(boost::asio::steady_timer::time_point::max());
  reactor_->StartWrite(&message_);
  // completed() cancels the timer; a cancellation of this coroutine also ends the wait, and then
  // the write is still pending: the message stays owned by this writer until OnDone.
  while (pending_) {
    auto [ec] = co_await write_done_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    if (pending_ && ec == boost::asio::error::operation_aborted)
      throw boost::system::system_error(ec, "waiting for a stream write");
  }
  co_return ok_;
}

}  // namespace nvdra::kubelet::rpc
