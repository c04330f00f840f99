#pragma once
// Runs one awaitable on a test's io_context to completion (deadline 30 s, no sleeping) and
// returns its value. Result has no default constructor, so the value travels through an
// optional rather than co_spawn's completion handler.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>

namespace nvdra::testing {

template <class T>
boost::asio::awaitable<void> store_result(boost::asio::awaitable<T> op, std::optional<T>* out) {
  out->emplace(co_await std::move(op));
}

template <class T>
T run_awaitable(boost::asio::io_context& io, boost::asio::awaitable<T> op,
                std::chrono::seconds deadline = std::chrono::seconds(30)) {
  io.restart();
  std::optional<T> out;
  boost::asio::co_spawn(io, store_result(std::move(op), &out), [&](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
    io.stop();
  });
  auto guard = boost::asio::make_work_guard(io);
  io.run_for(deadline);
  if (!out) throw std::runtime_error("operation did not finish before the deadline");
  return std::move(*out);
}

}  // namespace nvdra::testing
