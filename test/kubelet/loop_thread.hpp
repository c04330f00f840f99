#pragma once
// LoopThread — an io_context run on its own thread, standing in for the agent's loop while the test
// thread plays kubelet. await() runs a coroutine there and blocks the test thread for its result;
// sync() runs a function there. wait_until() polls a condition up to a deadline (no fixed sleeps).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <thread>

namespace nvdra::kubelet::testing {

class LoopThread {
 public:
  LoopThread() : work_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~LoopThread() {
    work_.reset();
    io_.stop();
    thread_.join();
  }
  boost::asio::any_io_executor ex() { return io_.get_executor(); }

  template <class T>
  T await(boost::asio::awaitable<T> a) {
    std::promise<T> p;
    auto f = p.get_future();
    boost::asio::co_spawn(io_, std::move(a), [&p](std::exception_ptr e, auto... v) {
      if (e) p.set_exception(e);
      else p.set_value(std::move(v)...);
    });
    return f.get();
  }

  template <class F>
  auto sync(F fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto f = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return f.get();
  }

 private:
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

// Polls `pred` until it holds or `timeout` passes; returns whether it held.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace nvdra::kubelet::testing
