#pragma once
// SlicePublisher: keeps one driver's ResourceSlices for this node equal to a desired value, as
// kubelet's resourceslice controller does (shared/reference/kubelet-dra-protocol.md §5.3):
//  * pool = node name, spec.nodeName = node, ownerReference = the Node (controller), names
//    generated as "<index>-<driver>-<node>-" and matched by index as upstream's controller does
//    (slice_names.hpp); per-slice device limits respected (slice_plan.hpp);
//  * actual state comes from a watch of the node's slices (slice_watch.hpp): the agent's drivers
//    share one (spec.nodeName=<node>); alone, a publisher watches spec.nodeName=<node>,spec.driver=<driver>;
//  * only differences are written (zero writes when the stored slices are already right), deleted
//    slices are recreated, stale ones removed; 409 → fresh state, then retried; other failures →
//    capped exponential backoff with jitter.
// Usage: co_spawn(ex, publisher.run(), …) once; call set_desired() whenever the devices change
// (nothing is written before the first call); co_await wait_converged() or on_converged() to learn
// that the current desired state is stored (the agent's READY=1 waits on this).
// Threading: all members on the executor's thread. run() ends only by cancellation.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/base/device.hpp"
#include "k8s/api_server.hpp"
#include "k8s/change_signal.hpp"
#include "k8s/reflector.hpp"
#include "k8s/server_facts.hpp"
#include "k8s/server_features.hpp"
#include "k8s/slice_plan.hpp"
#include "k8s/slice_watch.hpp"

namespace nvdra::k8s {

struct PublisherOptions {
  std::string driver;     // "gpu.nvidia.com"
  std::string node_name;  // also the pool name
  std::optional<CounterLayout> layout;  // default: chosen from the server's /version
  // Default: from /version and the server's OpenAPI document (server_features.hpp); a set value
  // skips discovery (tests). `layout`, when set, overrides rules->layout.
  std::optional<SliceRules> rules;
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  std::chrono::seconds watch_timeout{300};
  // Shared with the other drivers' publishers (one lookup for all); null: the publisher asks itself.
  std::shared_ptr<ServerFacts> facts;
  // Shared with the other drivers' publishers (one watch for all); null: a watch of this driver's own.
  std::shared_ptr<SliceWatch> watch;
};

class SlicePublisher {
 public:
  struct Stats {
    uint64_t reconciles = 0;
    uint64_t creates = 0;
    uint64_t updates = 0;
    uint64_t deletes = 0;
    uint64_t conflicts = 0;
    uint64_t failures = 0;
  };

  SlicePublisher(boost::asio::any_io_executor ex, std::shared_ptr<ApiServer> api, PublisherOptions options);
  ~SlicePublisher();

  void set_desired(DriverResources desired);
  boost::asio::awaitable<void> run();

  // True while the stored slices equal the current desired state.
  bool converged() const { return converged_; }
  // Completes when converged (at once if already); cancellable.
  boost::asio::awaitable<void> wait_converged();
  // Called (on the executor) each time the publisher becomes converged.
  void on_converged(std::function<void()> callback) { on_converged_ = std::move(callback); }

  // The API server's version, known once run() has fetched it (slice layout ≥1.35 vs <1.35).
  const std::optional<ServerVersion>& server_version() const { return version_; }
  // What the publisher writes to this server (known once run() has bootstrapped).
  const std::optional<SliceRules>& rules() const { return options_.rules; }
  const Stats& stats() const { return stats_; }
  // Watch statistics (lists, relists, resumes); null before run() started watching.
  const Reflector::Stats* watch_stats() const { return watching_ ? &watch_->reflector().stats() : nullptr; }

 private:
  enum class Outcome { kConverged, kProgress, kConflict, kFailed };
  boost::asio::awaitable<void> bootstrap();
  boost::asio::awaitable<void> bootstrap_then_loop();
  void note_dropped(const SliceObject& sent, const std::string& stored_json);
  boost::asio::awaitable<void> loop();
  boost::asio::awaitable<Outcome> reconcile_once();
  boost::asio::awaitable<void> refresh(std::string name);
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);
  void set_converged(bool value);

  boost::asio::any_io_executor ex_;
  std::shared_ptr<ApiServer> api_;
  PublisherOptions options_;
  ChangeSignal signal_;
  boost::asio::steady_timer converged_timer_;
  std::shared_ptr<SliceWatch> watch_;
  bool watching_ = false;
  std::optional<DriverResources> desired_;
  std::optional<ServerVersion> version_;
  std::string node_uid_;
  bool converged_ = false;
  std::function<void()> on_converged_;
  Stats stats_;
};

}  // namespace nvdra::k8s
