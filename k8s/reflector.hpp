#pragma once
// Reflector: list-then-watch one collection into a local cache, as client-go's reflector does it.
//  * list → cache replaced, then watch from the list's resourceVersion with bookmarks;
//  * the stream ends (timeoutSeconds) → watch again from the last version seen (no relist);
//  * the connection drops → the same at a moment drawn from [0, reconnect spread) (ReconnectPacing,
//    one per agent: its watches cut together come back together, and agents cut off together by an
//    API server restart spread over the window); failed attempts meanwhile back off from the spread;
//    a watch that ends within a second without an event counts as such a failure. Spread 0: the
//    pause is [base/2, base] and grows as the backoff does (before issue #33);
//  * each watch asks for timeoutSeconds drawn from [watch_timeout, 2 × watch_timeout), as
//    client-go's reflector (minWatchTimeout × (1 + rand)): a fleet started together does not reopen
//    its watches on one shared five-minute beat;
//  * 410 Gone / an ERROR event saying Expired → relist;
//  * 429 → wait Retry-After; other errors → capped exponential backoff with jitter, then retry;
//  * an oversized or malformed event is logged and skipped; the stream goes on.
// Local writes are applied with apply_local/erase_local (a mutation cache), so the owner does not
// act twice on its own change while the watch catches up; older watch events never overwrite newer
// local state. Executor thread only; run() returns only by cancellation.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "k8s/api_server.hpp"
#include "agent/base/backoff.hpp"
#include "agent/base/random_seed.hpp"
#include "agent/base/reconnect_pacing.hpp"
#include "k8s/change_signal.hpp"

namespace nvdra::k8s {

struct ReflectorOptions {
  std::string ns;
  std::string field_selector;
  std::string label_selector;
  std::chrono::seconds watch_timeout{300};  // the minimum: each watch draws from [this, 2 × this)
  std::size_t max_event_bytes = std::size_t{16} << 20;
  std::chrono::milliseconds backoff_base{200};
  std::chrono::milliseconds backoff_cap{30000};
  // Unset: the API client's (the agent's, from --api-reconnect-spread); neither: backoff alone.
  std::shared_ptr<ReconnectPacing> reconnect_pacing;
  // Awaited once, between the first LIST and the first WATCH: the owner's start may go first. The
  // watch then starts from the LIST's resourceVersion, so nothing that changed meanwhile is missed.
  std::function<boost::asio::awaitable<void>()> before_first_watch;
};

// [minimum, 2 × minimum) seconds, uniformly (client-go: minWatchTimeout * (rand.Float64() + 1.0)).
std::chrono::seconds jittered_watch_timeout(std::chrono::seconds minimum, std::minstd_rand& rng);

class Reflector {
 public:
  struct Stats {
    uint64_t lists = 0;
    uint64_t watches = 0;
    uint64_t relists_after_gone = 0;
    uint64_t resumes = 0;         // watch restarted from the last version without a relist
    uint64_t errors = 0;          // failed list/watch attempts (backed off)
    uint64_t skipped_events = 0;  // oversized or malformed
    uint64_t drops = 0;           // streams cut by the server or the network (resumed after a backoff)
    std::chrono::milliseconds last_drop_pause{0};  // the pause before resuming after the latest drop
  };
  struct Entry {
    std::string resource_version;
    std::string json;
  };

  Reflector(boost::asio::any_io_executor ex, std::shared_ptr<ApiServer> api, ResourceType type,
            ReflectorOptions options, ChangeSignal* on_change);

  boost::asio::awaitable<void> run();

  bool synced() const { return synced_; }
  // "ns/name" (or "name" for cluster-scoped objects) → newest known object.
  const std::map<std::string, Entry>& objects() const { return objects_; }
  void apply_local(const std::string& key, std::string resource_version, std::string json);
  void erase_local(const std::string& key, const std::string& resource_version);
  const Stats& stats() const { return stats_; }
  const std::string& last_resource_version() const { return resource_version_; }

 private:
  enum class Next { kResume, kRelist };
  boost::asio::awaitable<bool> list();
  boost::asio::awaitable<Next> watch();
  boost::asio::awaitable<Next> after_error(const ApiError& err, std::string_view what);
  boost::asio::awaitable<void> after_drop(const ApiError& err, bool very_short);
  void apply_event(WatchEvent& ev);
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);
  void changed();
  std::chrono::milliseconds failure_pause();
  std::chrono::milliseconds drop_pause(bool very_short);
  bool newer_or_equal(const std::string& incoming, const std::string& known) const;

  boost::asio::any_io_executor ex_;
  std::shared_ptr<ApiServer> api_;
  ResourceType type_;
  ReflectorOptions options_;
  ChangeSignal* on_change_;
  Backoff backoff_;
  std::minstd_rand rng_{random_seed()};
  std::shared_ptr<ReconnectPacing> pacing_;  // null: off
  std::map<std::string, Entry> objects_;
  std::map<std::string, std::string> tombstones_;  // locally deleted: ignore older events for them
  std::string resource_version_;
  bool synced_ = false;
  Stats stats_;
};

}  // namespace nvdra::k8s
