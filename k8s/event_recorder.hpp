#pragma once
// EventRecorder — events.k8s.io/v1 Events, aggregated and rate-limited the way client-go does it,
// without ever making the caller wait.
//
//  * record() only queues (bounded, client-go's maxQueuedEvents = 1000); a full queue drops the
//    event, counts it and logs the first drop and every power of two after it. It never suspends, so
//    a prepare that reports its failure is not slowed by the API server.
//  * run() drains the queue on its own coroutine. Isomorphic events — same action, reason,
//    reporting controller and regarding object (client-go's eventKey; the note is not part of it) —
//    become one Event: the first is created, a repeat turns it into a series and PATCHes
//    {"series":{"count","lastObservedTime"}} (count ≥ 2, as the API server requires). Repeats that
//    arrive while a write is in flight are counted together, so a burst costs one create and a
//    patch, not one write each. A series ends 6 minutes after its last occurrence (finishTime);
//    the next occurrence then starts a new Event.
//  * Writes per source and object pass a token bucket (tools/record's spam filter: burst 25, one
//    token per 5 minutes). A write the bucket refuses is deferred, not lost: the series' count
//    stays in memory and goes out with the next token or when the series ends (the final write is
//    not limited, as client-go's finishSeries).
//  * `regarding` is completed from the object itself before its first write (uid and
//    resourceVersion, as client-go's GetReference takes them from the object in hand): one GET of
//    the ResourceClaim or Node; a uid that does not match leaves the reference as given.
//  * Transport failures and 429/5xx answers are retried (client-go: 12 tries, 10 s apart); any
//    other rejection abandons the write, logged once.
// Thread: io_context only. Cancel run() to stop; flush() makes one bounded pass without retries.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "k8s/api_server.hpp"
#include "k8s/event_codec.hpp"

namespace nvdra::k8s {

struct EventRecorderOptions {
  std::string reporting_controller;  // the driver name
  std::string reporting_instance;    // "<driver>-<node>"
  std::size_t max_queued = 1000;
  std::chrono::steady_clock::duration finish_after = std::chrono::minutes(6);
  int spam_burst = 25;
  double spam_qps = 1.0 / 300;
  std::chrono::steady_clock::duration retry_interval = std::chrono::seconds(10);
  int max_tries = 12;
};

class EventRecorder {
 public:
  struct Stats {
    uint64_t recorded = 0;   // record() calls accepted into the queue
    uint64_t dropped = 0;    // record() calls refused: queue full
    uint64_t created = 0;    // Events created
    uint64_t patched = 0;    // series patches
    uint64_t deferred = 0;   // writes held back by the spam filter
    uint64_t failed = 0;     // writes abandoned
  };

  EventRecorder(boost::asio::any_io_executor ex, std::shared_ptr<ApiServer> api, EventRecorderOptions options);
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void record(EventInfo info);
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> flush();
  const Stats& stats() const { return stats_; }
  const EventRecorderOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  using Key = std::tuple<std::string, std::string, ObjectRef>;  // action, reason, regarding
  struct Entry {
    EventInfo info;
    EventIdentity id;
    int32_t count = 1;
    std::chrono::system_clock::time_point last_observed;
    Clock::time_point last_seen;   // for the series' end
    int32_t written = 0;           // count the API server has; 0: not created
    bool ref_completed = false;
    int tries = 0;
    Clock::time_point not_before{};  // retry after a transport failure
    bool due() const { return written != count; }
  };
  struct Bucket {
    double tokens = 0;
    Clock::time_point last{};
  };

  void absorb(Clock::time_point now);
  // Writes what is due; returns when the next write or series end falls due.
  boost::asio::awaitable<Clock::time_point> write_due(bool single_pass);
  boost::asio::awaitable<void> write(Entry& entry, bool retry);
  boost::asio::awaitable<void> complete_ref(ObjectRef& ref);
  bool take_token(const ObjectRef& regarding, Clock::time_point now, Clock::time_point& next_token);

  boost::asio::any_io_executor ex_;
  std::shared_ptr<ApiServer> api_;
  EventRecorderOptions options_;
  std::deque<std::pair<EventInfo, std::chrono::system_clock::time_point>> queue_;
  std::map<Key, Entry> cache_;
  std::map<std::string, Bucket> buckets_;
  boost::asio::steady_timer wake_;
  bool waiting_ = false;
  Stats stats_;
};

}  // namespace nvdra::k8s
