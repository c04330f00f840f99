#include "agent/claims/fabric/fm_thread.hpp"

namespace nvdra::claims {

FmThread::FmThread() : thread_([state = state_] { loop(state); }) {}

FmThread::~FmThread() {
  bool busy = false;
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
    state_->queue.clear();  // their awaiters are past their deadline or gone with the agent
    busy = state_->busy;
  }
  state_->cv.notify_all();
  if (busy) thread_.detach();
  else thread_.join();
}

void FmThread::post(std::function<void()> work) {
  {
    std::lock_guard lock(state_->mu);
    state_->queue.push_back(std::move(work));
  }
  state_->cv.notify_one();
}

void FmThread::loop(const std::shared_ptr<State>& state) {
  std::unique_lock lock(state->mu);
  for (;;) {
    state->cv.wait(lock, [&] { return state->stop || !state->queue.empty(); });
    if (state->stop) return;
    auto work = std::move(state->queue.front());
    state->queue.pop_front();
    state->busy = true;
    lock.unlock();
    work();
    work = nullptr;  // what it captured (the FM binding) goes on this thread, outside the lock
    lock.lock();
    state->busy = false;
  }
}

}  // namespace nvdra::claims
