#pragma once
// FmThread — the one thread FabricManager calls run on (FM serves one call at a time anyway; the
// binding holds its lock for the whole round trip). A call FM never answers then costs FM only:
// the shared WorkerPool, which prepares every claim, keeps all its threads. Work is queued in order.
// Destruction joins the thread when it is idle; a call still inside FM keeps the thread, detached,
// until FM answers or the process ends (joining it would hang the agent's shutdown on FM).
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace nvdra::claims {

class FmThread {
 public:
  FmThread();
  ~FmThread();
  FmThread(const FmThread&) = delete;
  FmThread& operator=(const FmThread&) = delete;

  void post(std::function<void()> work);

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    bool stop = false;
    bool busy = false;
  };
  static void loop(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
};

}  // namespace nvdra::claims
