#pragma once
// run_concurrently — awaits a set of coroutines started together on one executor and completes when
// all have ended; cancelling the caller cancels all of them. The first exception (if any) is
// rethrown after every coroutine has finished, so nothing outlives the caller's frame.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <vector>

namespace nvdra::kubelet {

namespace detail {
// Asio 1.81's co_spawn entry point awaits once more after the body returns; if the coroutine was
// cancelled that await throws out of the completion path, so every spawned body ends here.
inline boost::asio::awaitable<void> finish_quietly(boost::asio::awaitable<void> body) {
  std::exception_ptr failure;
  try {
    co_await std::move(body);
  } catch (...) {
    failure = std::current_exception();
  }
  co_await boost::asio::this_coro::throw_if_cancelled(false);
  if (failure) std::rethrow_exception(failure);
}
}  // namespace detail

inline boost::asio::awaitable<void> run_concurrently(boost::asio::any_io_executor ex,
                                                     std::vector<boost::asio::awaitable<void>> bodies) {
  namespace asio = boost::asio;
  if (bodies.empty()) co_return;
  using Op = decltype(asio::co_spawn(ex, detail::finish_quietly(std::move(bodies.front())), asio::deferred));
  std::vector<Op> ops;
  ops.reserve(bodies.size());
  for (auto& body : bodies) ops.push_back(asio::co_spawn(ex, detail::finish_quietly(std::move(body)), asio::deferred));
  auto [order, failures] = co_await asio::experimental::make_parallel_group(std::move(ops))
                               .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
}

}  // namespace nvdra::kubelet
