#pragma once
// WorkerPool — where blocking work (NVML, fsync, exec of helper programs) runs, so the io_context
// thread never blocks. `co_await pool.run(fn)` runs fn on a pool thread and resumes the caller on
// its own executor. fn cannot be interrupted once started: cancelling the awaiting coroutine takes
// effect when fn returns, which is why work handed here must be bounded.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace nvdra::runtime {

class WorkerPool {
 public:
  explicit WorkerPool(std::size_t threads) : pool_(threads) {}
  ~WorkerPool() { join(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  template <class F>
  boost::asio::awaitable<std::invoke_result_t<F&>> run(F fn) {
    using R = std::invoke_result_t<F&>;
    // The lambda is moved into co_spawn, which keeps it alive for the whole coroutine.
    return boost::asio::co_spawn(
        pool_.get_executor(),
        [fn = std::move(fn)]() mutable -> boost::asio::awaitable<R> {
          // fn cannot be interrupted, and Asio 1.81's co_spawn entry point awaits once more after
          // we return: a "cancelled" state there would throw on a pool thread.
          co_await boost::asio::this_coro::throw_if_cancelled(false);
          co_return fn();
        },
        // An empty slot: the awaiter's cancellation is not forwarded at all. Forwarded, it could
        // reach the child before its entry point's first await, which then throws on a pool
        // thread (std::terminate) — seen when SIGTERM arrived while a plugin was starting.
        boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), boost::asio::use_awaitable));
  }

  boost::asio::thread_pool::executor_type executor() noexcept { return pool_.get_executor(); }

  // Waits for queued work to finish and joins the threads. Idempotent.
  void join() {
    pool_.stop();
    pool_.join();
  }

 private:
  boost::asio::thread_pool pool_;
};

}  // namespace nvdra::runtime
