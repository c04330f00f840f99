#pragma once
// ComputeDomainReconciler — the controller role's work while this agent leads (HostManagedIMEX):
// the seed's add and delete paths for every ComputeDomain, nothing else (no DaemonSets, daemon
// RCTs, node labels or cliques: they do not exist in this mode).
//  add (not deleting):  add the CD finalizer if missing → create the workload ResourceClaimTemplate
//                       if missing → status.status = Ready.
//  delete (deleting):   delete the workload RCT → remove its finalizer → check it is gone → remove
//                       the CD finalizer → forget the CD's metrics.
// Writes are conditional on resourceVersion; a 409 or any failure leaves that CD for the next round
// (the watch brings the fresh object; failures retry with capped backoff). An RCT of that name that
// belongs to another ComputeDomain is never touched; the CD is reported and retried.
// run() watches ComputeDomains in all namespaces with a Reflector; executor thread only; it ends
// only by cancellation (when leadership is lost or the agent stops).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "agent/base/result.hpp"
#include "agent/controller/compute_domain.hpp"
#include "k8s/api_server.hpp"

namespace nvdra::controller {

struct ReconcilerOptions {
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  std::chrono::seconds resync{300};  // every CD is looked at again this often
  std::chrono::seconds watch_timeout{300};
};

class ComputeDomainReconciler {
 public:
  struct Stats {
    uint64_t passes = 0;
    uint64_t rct_creates = 0;
    uint64_t rct_deletes = 0;
    uint64_t finalizer_writes = 0;  // CD and RCT finalizers added or removed
    uint64_t status_writes = 0;
    uint64_t failures = 0;
    uint64_t conflicts = 0;  // 409s: a stale copy, retried quietly
  };
  // What the controller keeps per ComputeDomain (its "metrics"); dropped by the delete path.
  struct Tracked {
    std::string key;  // ns/name
    std::string status;
  };

  ComputeDomainReconciler(boost::asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api,
                          ReconcilerOptions options = {});

  boost::asio::awaitable<void> run();
  // One ComputeDomain, as stored (raw JSON): the add or the delete path.
  boost::asio::awaitable<Status> reconcile(std::string cd_json);

  void on_error(std::function<void(const std::string&)> fn) { on_error_ = std::move(fn); }
  const std::map<std::string, Tracked>& tracked() const { return tracked_; }  // by CD UID
  const Stats& stats() const { return stats_; }

 private:
  boost::asio::awaitable<Status> add(ComputeDomain cd, std::string json);
  boost::asio::awaitable<Status> remove(ComputeDomain cd, std::string json);
  boost::asio::awaitable<Status> ensure_rct(const ComputeDomain& cd);
  boost::asio::awaitable<Status> delete_rct(const ComputeDomain& cd);
  boost::asio::awaitable<Status> set_cd_finalizer(const ComputeDomain& cd, const std::string& json, bool present,
                                                  std::string* stored);
  Error api_error(const ComputeDomain& cd, const std::string& what, const k8s::ApiError& err) const;

  boost::asio::any_io_executor ex_;
  std::shared_ptr<k8s::ApiServer> api_;
  ReconcilerOptions options_;
  std::map<std::string, Tracked> tracked_;
  std::map<std::string, std::string> done_;  // CD UID → the resourceVersion last reconciled fully
  std::function<void(const std::string&)> on_error_;
  Stats stats_;
};

}  // namespace nvdra::controller
