#pragma once
// DomainCleanup — the domain-directory work driver-managed mode does when ComputeDomains disappear
// (ComputeDomainCache::on_gone) or once the watches have listed (on_synced: the sweep), queued here
// and done by run() instead of by detached coroutines. Why: a detached coroutine holding the claim
// handler could resume (after its worker-pool step) once the agent had shut down and freed the
// handler, its committer and its CDI store. run() is awaited inside the driver's serving scope
// (DriverBackend::run), so cancellation ends it, and DriverComponent destroys the backend only after
// it has returned. Work queued before run() starts, or still queued at shutdown, waits or is dropped
// (the next start sweeps again). Executor thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <deque>
#include <string>

#include "k8s/change_signal.hpp"

namespace nvdra::drivers {

class DriverManagedClaimHandler;

class DomainCleanup {
 public:
  explicit DomainCleanup(boost::asio::any_io_executor ex) : queued_(std::move(ex)) {}

  void gone(std::string uid);  // ComputeDomain `uid` was deleted
  void sweep();                // the watches have listed: look at every domain directory

  // Does the queued work, in order, on `handler` until cancelled. Cancellation takes effect at the
  // next wait or when the current worker-pool step returns (WorkerPool::run).
  boost::asio::awaitable<void> run(DriverManagedClaimHandler& handler);

  std::size_t queued() const { return uids_.size() + (sweep_ ? 1 : 0); }

 private:
  k8s::ChangeSignal queued_;
  std::deque<std::string> uids_;
  bool sweep_ = false;
};

}  // namespace nvdra::drivers
