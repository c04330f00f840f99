#include "agent/kubelet/rpc_bridge.hpp"

#include <boost/asio/this_coro.hpp>

#include <vector>

namespace asio = boost::asio;

namespace nvdra::kubelet::rpc {

void CallTracker::add(const std::shared_ptr<CallState>& call) {
  calls_.insert(call);
  live_.store(calls_.size());
}

void CallTracker::remove(const std::shared_ptr<CallState>& call) {
  calls_.erase(call);
  live_.store(calls_.size());
}

void CallTracker::close_and_cancel_all() {
  closed_ = true;
  // Copy first: a call may complete inside emit() and remove itself.
  std::vector<std::shared_ptr<CallState>> snapshot(calls_.begin(), calls_.end());
  for (auto& call : snapshot)
    if (!call->finished) call->cancel.emit(asio::cancellation_type::terminal);
}

void relay_cancel(const asio::any_io_executor& ex, std::shared_ptr<CallState> state) {
  asio::post(ex, [state = std::move(state)] {
    state->cancel_requested = true;
    if (!state->finished) state->cancel.emit(asio::cancellation_type::terminal);
  });
}

grpc::Status status_from(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) return grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "unknown exception");
  }
}

asio::awaitable<grpc::Status> finish_quietly(asio::awaitable<grpc::Status> body) {
  grpc::Status status;
  std::exception_ptr failure;
  try {
    status = co_await std::move(body);
  } catch (...) {
    failure = std::current_exception();
  }
  co_await asio::this_coro::throw_if_cancelled(false);
  if (failure) std::rethrow_exception(failure);
  co_return status;
}

}  // namespace nvdra::kubelet::rpc
