#include "agent/runtime/supervisor.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/redirect_error.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <typeinfo>

#include "agent/base/log.hpp"
#include "agent/base/backoff.hpp"

namespace asio = boost::asio;

namespace nvdra::runtime {

namespace {

// What a thrown value that is not a std::exception was: its demangled type (gcc/clang ABI).
std::string describe_unknown_exception() {
  std::string type = "unknown type";
  if (const std::type_info* t = abi::__cxa_current_exception_type()) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t->name(), nullptr, nullptr, &status), std::free);
    type = status == 0 && name ? name.get() : t->name();
  }
  return "threw a value of type " + type + " (not a std::exception)";
}

}  // namespace

struct Supervisor::Task {
  std::string name;
  TaskFactory factory;
  OnFailure policy = OnFailure::kRestart;
  asio::cancellation_signal signal;
};

Supervisor::Supervisor(asio::any_io_executor ex) : ex_(ex), log_(nvdra::logger("supervisor")), deadline_(ex) {}

Supervisor::~Supervisor() = default;

void Supervisor::spawn(std::string name, TaskFactory factory, OnFailure policy) {
  auto task = std::make_shared<Task>();
  task->name = std::move(name);
  task->factory = std::move(factory);
  task->policy = policy;
  tasks_.push_back(task);
  log_->debug("task={} started", task->name);
  asio::co_spawn(ex_, run_task(task),
                 asio::bind_cancellation_slot(task->signal.slot(), [this, task](std::exception_ptr) {
                   finished(task);
                 }));
  if (stopping_) task->signal.emit(asio::cancellation_type::all);
}

asio::awaitable<void> Supervisor::run_task(std::shared_ptr<Task> task) {
  try {
    co_await supervise(task);
  } catch (...) {
    // Only reached when cancellation arrived before supervise() started: nothing ran, nothing to log.
  }
  // Asio 1.81's co_spawn entry point awaits once more after the task returns; with the task's
  // cancellation state still set, that await would throw out of io_context::run().
  co_await asio::this_coro::throw_if_cancelled(false);
}

asio::awaitable<void> Supervisor::supervise(std::shared_ptr<Task> task) {
  Backoff backoff(std::chrono::milliseconds(200), std::chrono::seconds(30));
  for (;;) {
    std::string failure;
    try {
      co_await task->factory();
      co_return;  // a task that returns on its own is done, whatever the reason
    } catch (const boost::system::system_error& e) {
      if (e.code() == asio::error::operation_aborted && stopping_) co_return;
      failure = e.what();
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      // Whatever a task throws is a failure to log and restart from, never a silent end.
      failure = describe_unknown_exception();
    }
    if (stopping_) co_return;
    if (task->policy == OnFailure::kExitProcess) {
      log_->error("task={} failed: {}; stopping the agent", task->name, failure);
      fail(1);
      co_return;
    }
    const auto delay = backoff.next();
    log_->error("task={} failed: {}; restarting in {} ms (attempt {})", task->name, failure, delay.count(),
                backoff.attempts());
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || stopping_) co_return;
  }
}

void Supervisor::finished(const std::shared_ptr<Task>& task) {
  log_->debug("task={} ended", task->name);
  tasks_.remove(task);
  if (stopping_ && tasks_.empty()) {
    deadline_.cancel();
    if (on_all_stopped_) on_all_stopped_();
  }
}

void Supervisor::stop(std::chrono::milliseconds grace) {
  if (stopping_) return;
  stopping_ = true;
  if (tasks_.empty()) {
    if (on_all_stopped_) on_all_stopped_();
    return;
  }
  deadline_.expires_after(grace);
  deadline_.async_wait([this](boost::system::error_code ec) {
    if (ec || tasks_.empty()) return;
    std::string names;
    for (const auto& name : live_tasks()) names += (names.empty() ? "" : ",") + name;
    log_->error("tasks did not stop within the grace period: {}", names);
    if (on_deadline_) on_deadline_();
  });
  // Copy first: a task may finish synchronously inside emit() and remove itself from tasks_.
  auto snapshot = std::vector<std::shared_ptr<Task>>(tasks_.begin(), tasks_.end());
  for (auto& task : snapshot) task->signal.emit(asio::cancellation_type::all);
}

void Supervisor::fail(int code) {
  if (exit_code_ == 0) exit_code_ = code;
  stop();
}

std::vector<std::string> Supervisor::live_tasks() const {
  std::vector<std::string> names;
  for (const auto& t : tasks_) names.push_back(t->name);
  return names;
}

}  // namespace nvdra::runtime
