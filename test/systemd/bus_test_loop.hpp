#pragma once
// Helpers for tests that drive coroutines on an io_context: run until a condition holds or a
// deadline passes (no sleeps), and spawn a coroutine whose result lands in an optional.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <optional>

namespace nvdra::test {

// Runs handlers until `done()` is true; false if `limit` passed first.
inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto guard = boost::asio::make_work_guard(io);  // so run_one_for waits for events instead of spinning
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    io.restart();
    io.run_one_for(std::chrono::milliseconds(50));
  }
  return true;
}

template <class T>
boost::asio::awaitable<void> store_result(boost::asio::awaitable<T> work, std::optional<T>* out) {
  out->emplace(co_await std::move(work));
}

// Results need not be default-constructible (co_spawn of awaitable<T> would require it).
template <class T>
void spawn_into(boost::asio::io_context& io, boost::asio::awaitable<T> work, std::optional<T>& out) {
  boost::asio::co_spawn(io, store_result(std::move(work), &out), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
}

}  // namespace nvdra::test
