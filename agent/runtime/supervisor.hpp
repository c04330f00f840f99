#pragma once
// Supervisor — owns every long-lived coroutine of the agent (structured concurrency).
//
// Each task is started with its own cancellation signal. stop() emits total cancellation to all of
// them; a task must then return promptly (it may still await its own cleanup). A task that throws
// is logged with its name and, by its policy, restarted with capped backoff or turned into a
// process exit with status 1 — never a silent hang. All methods run on the io_context thread.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace spdlog { class logger; }

namespace nvdra::runtime {

enum class OnFailure {
  kRestart,      // log, wait with backoff, start the task again
  kExitProcess,  // log, stop everything, exit status 1
};

class Supervisor {
 public:
  using TaskFactory = std::function<boost::asio::awaitable<void>()>;

  explicit Supervisor(boost::asio::any_io_executor ex);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  void spawn(std::string name, TaskFactory factory, OnFailure policy);

  // Cancels every task. `grace` bounds how long they may take to finish; tasks still running then
  // are named in the log and `on_deadline` is called (the runtime stops the io_context).
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(800));
  // Ends the process with `code` after a clean stop (used by kExitProcess tasks and fatal errors).
  void fail(int code);

  void on_deadline(std::function<void()> fn) { on_deadline_ = std::move(fn); }
  void on_all_stopped(std::function<void()> fn) { on_all_stopped_ = std::move(fn); }

  bool stopping() const { return stopping_; }
  int exit_code() const { return exit_code_; }
  std::vector<std::string> live_tasks() const;

 private:
  struct Task;
  boost::asio::awaitable<void> run_task(std::shared_ptr<Task> task);
  boost::asio::awaitable<void> supervise(std::shared_ptr<Task> task);
  void finished(const std::shared_ptr<Task>& task);

  boost::asio::any_io_executor ex_;
  std::shared_ptr<spdlog::logger> log_;
  std::list<std::shared_ptr<Task>> tasks_;
  boost::asio::steady_timer deadline_;
  std::function<void()> on_deadline_;
  std::function<void()> on_all_stopped_;
  bool stopping_ = false;
  int exit_code_ = 0;
};

}  // namespace nvdra::runtime
