#pragma once
// ComputeDomainCache — what driver-managed IMEX channel and daemon prepares need to know about
// ComputeDomains and ComputeDomainCliques, kept by two watches (one Reflector each: ComputeDomains in
// every namespace, ComputeDomainCliques in the driver namespace) instead of a GET per prepare.
// The clique watch is label-selected to this node's clique (resource.nvidia.com/computeDomain.cliqueID,
// which upstream's daemon puts on every clique it creates; the CRD has no selectable fields, and the
// name <uid>.<clique> cannot be selected by its suffix); select_clique() re-lists when the node's
// clique changes. ComputeDomains cannot be narrowed to a node: the node appears only in status.nodes,
// which no selector reaches, and a channel claim may name a domain before any daemon reports there.
// Prepares read the cache and, while this node's IMEX daemon is not Ready, wait for the next change
// (every waiter wakes on every change and looks again), bounded by a deadline: the daemon's Ready
// write answers a waiting prepare as soon as the watch delivers it. A ComputeDomain that disappears
// is reported to on_gone() (its daemon's domain directory is then removed by the handler).
// Executor thread only. start() spawns the watches; stop() (or destruction of the last owner after
// stop()) ends them.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nvdra::k8s {
class ApiServer;
class ChangeSignal;
class Reflector;
}  // namespace nvdra::k8s

namespace nvdra::drivers {

struct DomainNode {
  std::string name;    // node name (status.nodes[].name, daemons[].nodeName)
  std::string status;  // "Ready" | "NotReady" | "" (not written)
};

struct DomainInfo {
  std::string uid;
  std::string name;
  std::string ns;
  std::vector<DomainNode> nodes;  // status.nodes
};

// What readiness looked at, and what it found.
struct DomainReadiness {
  bool ready = false;
  std::string detail;  // "ComputeDomainClique nvidia-dra/<uid>.<clique> lists node n1 as NotReady", …
};

class ComputeDomainCache : public std::enable_shared_from_this<ComputeDomainCache> {
 public:
  ComputeDomainCache(boost::asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api, std::string driver_ns,
                     std::string node, std::string clique_id);
  ~ComputeDomainCache();

  void start();
  void stop();
  bool synced() const { return domains_synced_ && cliques_synced_; }
  // The node's clique changed (CliqueRefresh): the clique watch is selected anew and lists again.
  void select_clique(std::string clique_id);
  const std::string& clique_selector() const { return clique_selector_; }

  std::optional<DomainInfo> domain(const std::string& uid) const;
  // Upstream's rule (§9.4): with `use_cliques`, the clique object "<uid>.<clique_id>" lists this
  // node's daemon Ready; otherwise, or as fallback, the ComputeDomain's status.nodes does.
  DomainReadiness readiness(const std::string& uid, const std::string& clique_id, bool use_cliques) const;

  // Returns at the next change of either collection, or at `deadline`; cancellable.
  boost::asio::awaitable<void> wait_change(std::chrono::steady_clock::time_point deadline);

  void on_gone(std::function<void(const std::string& uid)> f) { on_gone_ = std::move(f); }
  // Once, when both collections have been listed for the first time.
  void on_synced(std::function<void()> f) { on_synced_ = std::move(f); }

  struct Stats {
    uint64_t changes = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> run_cliques();
  boost::asio::awaitable<void> reselected(std::string current);
  boost::asio::awaitable<void> follow(k8s::ChangeSignal& signal, k8s::Reflector& r, bool cliques);
  void rebuild_domains(const std::map<std::string, std::string>& objects);
  void rebuild_cliques(const std::map<std::string, std::string>& objects);
  void wake();

  boost::asio::any_io_executor ex_;
  std::shared_ptr<k8s::ApiServer> api_;
  std::string driver_ns_;
  std::string node_;
  std::string clique_selector_;
  std::unique_ptr<k8s::ChangeSignal> reselect_;
  boost::asio::cancellation_signal stop_;
  bool started_ = false;
  bool domains_synced_ = false;
  bool cliques_synced_ = false;
  std::map<std::string, DomainInfo> domains_;                  // by uid
  std::map<std::string, std::vector<DomainNode>> cliques_;     // by object name
  std::list<boost::asio::steady_timer*> waiters_;
  std::function<void(const std::string&)> on_gone_;
  std::function<void()> on_synced_;
  Stats stats_;
};

}  // namespace nvdra::drivers
