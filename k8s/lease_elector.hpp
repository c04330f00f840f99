#pragma once
// LeaseElector: leader election over one coordination.k8s.io/v1 Lease, as client-go's
// leaderelection package does it:
//  * acquire: create the Lease, or take it over when it is released (no holder) or when its holder
//    has not renewed for leaseDurationSeconds. Expiry is judged by this process's own clock from
//    the moment it last saw the record change (not by the renewTime text), so clock skew between
//    hosts does not matter;
//  * followers watch the Lease (one watch, field selector on its name) instead of polling it as
//    client-go does: each renewal is seen as it happens, so the local expiry is within a watch
//    delivery of the holder's, and the follower wakes exactly then. A killed leader is replaced one
//    lease duration after its last renewal (client-go: up to two retry periods later), and idle
//    followers cost the API server one watch each instead of a GET every retry period;
//  * renew: every retry_period the leader writes renewTime; a write that loses a race gets 409
//    (the update is conditional on resourceVersion) and counts as a failed round;
//  * lost: another holder is seen, or no renewal succeeded for renew_deadline;
//  * release on shutdown: when run() is cancelled while leading, holderIdentity is cleared (with a
//    short deadline of its own) so a peer takes over at once instead of after the lease expires.
// Threading: executor thread only. run() ends only by cancellation.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "agent/base/random_seed.hpp"
#include "k8s/api_server.hpp"
#include "k8s/change_signal.hpp"
#include "k8s/lease_codec.hpp"
#include "k8s/reflector.hpp"

namespace nvdra::k8s {

struct LeaseElectorOptions {
  std::string ns;        // the Lease's namespace (--namespace)
  std::string name;      // "compute-domain-controller"
  std::string identity;  // this node's name
  // client-go's defaults, as upstream's controller uses them.
  std::chrono::seconds lease_duration{15};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  std::chrono::milliseconds release_timeout{500};  // within the supervisor's shutdown grace
};

class LeaseElector {
 public:
  struct Stats {
    uint64_t acquisitions = 0;  // became leader
    uint64_t renewals = 0;      // successful writes while leader (acquisitions excluded)
    uint64_t losses = 0;
    uint64_t conflicts = 0;     // 409 on create/update
    uint64_t failures = 0;      // other failed requests
    uint64_t releases = 0;
  };

  LeaseElector(boost::asio::any_io_executor ex, std::shared_ptr<ApiServer> api, LeaseElectorOptions options);

  boost::asio::awaitable<void> run();

  bool leader() const { return leader_; }
  // Complete at once when already in that state; cancellable.
  boost::asio::awaitable<void> wait_leader();
  boost::asio::awaitable<void> wait_lost();
  // Called on the executor with the new state each time it changes.
  void on_change(std::function<void(bool leader)> fn) { on_change_ = std::move(fn); }
  // Called with a sentence for each failed request (not for losing a race).
  void on_error(std::function<void(const std::string&)> fn) { on_error_ = std::move(fn); }
  // The holder this elector last saw in the Lease (empty: none / not read yet).
  const std::string& observed_holder() const { return observed_.holder; }
  const Stats& stats() const { return stats_; }
  const LeaseElectorOptions& options() const { return options_; }

 private:
  boost::asio::awaitable<void> elect(Reflector& watcher, ChangeSignal& changed);
  void observe(const Reflector& watcher);
  boost::asio::awaitable<bool> try_acquire_or_renew();
  boost::asio::awaitable<void> release();
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);
  void set_leader(bool value);
  void failed(const std::string& what, const ApiError& err);

  boost::asio::any_io_executor ex_;
  std::shared_ptr<ApiServer> api_;
  LeaseElectorOptions options_;
  boost::asio::steady_timer state_timer_;  // cancelled on every change: wakes the waiters
  bool leader_ = false;
  LeaseRecord observed_;
  std::chrono::steady_clock::time_point observed_at_{};
  std::string observed_version_;
  std::chrono::steady_clock::time_point last_renew_{};
  std::function<void(bool)> on_change_;
  std::function<void(const std::string&)> on_error_;
  std::minstd_rand rng_{random_seed()};
  Stats stats_;
};

}  // namespace nvdra::k8s
