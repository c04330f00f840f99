#include "k8s/event_recorder.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <bit>

#include "agent/base/log.hpp"
#include "k8s/cancellation.hpp"
#include "k8s/object_meta.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
using SysClock = std::chrono::system_clock;

namespace {

std::string describe(const ObjectRef& r) {
  return r.kind + " " + (r.ns.empty() ? r.name : r.ns + "/" + r.name);
}

// tools/record's spam key: source and object, not the reason or message.
std::string spam_key(const std::string& controller, const ObjectRef& r) {
  return controller + '\x1f' + r.kind + '\x1f' + r.ns + '\x1f' + r.name + '\x1f' + r.uid + '\x1f' + r.api_version;
}

const ResourceType* type_of(const ObjectRef& r) {
  if (r.kind == "ResourceClaim" && r.api_version == "resource.k8s.io/v1") return &kResourceClaimsV1;
  if (r.kind == "Node" && r.api_version == "v1") return &kNodesV1;
  return nullptr;
}

bool retryable(const ApiError& e) { return e.http_status == 0 || e.http_status == 429 || e.http_status >= 500; }

}  // namespace

EventRecorder::EventRecorder(asio::any_io_executor ex, std::shared_ptr<ApiServer> api, EventRecorderOptions options)
    : ex_(ex), api_(std::move(api)), options_(std::move(options)), wake_(ex, Clock::time_point::max()) {}

EventRecorder::~EventRecorder() = default;

void EventRecorder::record(EventInfo info) {
  if (queue_.size() >= options_.max_queued) {
    ++stats_.dropped;
    if (std::has_single_bit(stats_.dropped))
      nvdra::logger(options_.reporting_controller)
          ->warn("events queue full ({} queued): dropped event reason={} regarding=\"{}\" (dropped so far: {})",
                 queue_.size(), info.reason, describe(info.regarding), stats_.dropped);
    return;
  }
  ++stats_.recorded;
  queue_.emplace_back(std::move(info), SysClock::now());
  if (waiting_) wake_.cancel();
}

void EventRecorder::absorb(Clock::time_point now) {
  while (!queue_.empty()) {
    auto [info, when] = std::move(queue_.front());
    queue_.pop_front();
    Key key{info.action, info.reason, info.regarding};
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      Entry e;
      e.id = make_identity(info.regarding, options_.reporting_controller, options_.reporting_instance, when);
      e.info = std::move(info);
      e.last_observed = when;
      e.last_seen = now;
      cache_.emplace(std::move(key), std::move(e));
    } else {
      // A repeat: client-go keeps the first Event's note and counts the occurrence.
      ++it->second.count;
      it->second.last_observed = when;
      it->second.last_seen = now;
    }
  }
}

bool EventRecorder::take_token(const ObjectRef& regarding, Clock::time_point now, Clock::time_point& next_token) {
  if (options_.spam_qps <= 0) return true;
  auto [it, fresh] = buckets_.try_emplace(spam_key(options_.reporting_controller, regarding));
  Bucket& b = it->second;
  if (fresh) {
    b.tokens = options_.spam_burst;
    b.last = now;
  }
  const double elapsed = std::chrono::duration<double>(now - b.last).count();
  b.tokens = std::min<double>(options_.spam_burst, b.tokens + elapsed * options_.spam_qps);
  b.last = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  next_token = now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>((1 - b.tokens) / options_.spam_qps));
  return false;
}

asio::awaitable<void> EventRecorder::complete_ref(ObjectRef& ref) {
  const ResourceType* type = type_of(ref);
  if (!type || !api_) co_return;
  auto got = co_await api_->get(*type, ObjectKey{ref.ns, ref.name});
  if (!got) co_return;  // gone or unreachable: the reference stays as the caller gave it
  auto meta = read_object_meta(*got);
  if (!meta) co_return;
  if (ref.uid.empty()) ref.uid = meta->uid;
  if (ref.uid == meta->uid) ref.resource_version = meta->resource_version;
}

asio::awaitable<void> EventRecorder::write(Entry& e, bool retry) {
  if (!e.ref_completed) {
    co_await complete_ref(e.info.regarding);
    e.ref_completed = true;
  }
  const int32_t count = e.count;
  std::optional<EventSeries> series;
  if (count >= 2) series = EventSeries{count, e.last_observed};
  ApiResult<std::string> res = ApiError{};
  const bool patching = e.written > 0;
  if (patching) {
    res = co_await api_->patch(kEventsV1, ObjectKey{e.id.ns, e.id.name}, encode_series_patch(*series));
    if (!res && res.error().not_found()) e.written = 0;  // the Event expired: create it again
  }
  if (e.written == 0) res = co_await api_->create(kEventsV1, e.id.ns, encode_event(e.id, e.info, series));
  if (res) {
    ++(e.written == 0 ? stats_.created : stats_.patched);
    e.written = count;
    e.tries = 0;
    co_return;
  }
  auto log = nvdra::logger(options_.reporting_controller);
  if (retry && retryable(res.error()) && ++e.tries < options_.max_tries) {
    e.not_before = Clock::now() + options_.retry_interval;
    log->warn("event reason={} regarding=\"{}\": {} (retrying)", e.info.reason, describe(e.info.regarding),
              res.error().describe());
    co_return;
  }
  ++stats_.failed;
  log->error("event reason={} regarding=\"{}\" not written: {}", e.info.reason, describe(e.info.regarding),
             res.error().describe());
  e.written = std::max(e.written, count);  // abandoned, as client-go does; a new occurrence tries again
  e.tries = 0;
}

asio::awaitable<EventRecorder::Clock::time_point> EventRecorder::write_due(bool single_pass) {
  auto next = Clock::time_point::max();
  for (auto it = cache_.begin(); it != cache_.end();) {
    Entry& e = it->second;
    const auto now = Clock::now();
    const bool finished = now >= e.last_seen + options_.finish_after;
    if (e.due() && (single_pass || now >= e.not_before)) {
      auto token_at = Clock::time_point::max();
      if (finished || take_token(e.info.regarding, now, token_at)) {
        co_await write(e, !single_pass && !finished);
      } else {
        ++stats_.deferred;
        e.not_before = token_at;
      }
    }
    if (e.due()) next = std::min(next, std::max(e.not_before, Clock::now()));
    if (finished && !e.due()) {
      it = cache_.erase(it);
      continue;
    }
    next = std::min(next, e.last_seen + options_.finish_after);
    ++it;
  }
  // Buckets that have refilled say nothing the next fresh one would not: keep the map small.
  const auto now = Clock::now();
  std::erase_if(buckets_, [&](const auto& kv) {
    const double elapsed = std::chrono::duration<double>(now - kv.second.last).count();
    return kv.second.tokens + elapsed * options_.spam_qps >= options_.spam_burst;
  });
  co_return next;
}

asio::awaitable<void> EventRecorder::run() {
  if (!api_) co_return;
  for (;;) {
    absorb(Clock::now());
    const auto next = co_await write_due(false);
    if (!queue_.empty()) continue;  // recorded while writing
    wake_.expires_at(next);
    waiting_ = true;
    co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
    waiting_ = false;
    co_await throw_if_cancelled();
  }
}

asio::awaitable<void> EventRecorder::flush() {
  if (!api_) co_return;
  absorb(Clock::now());
  co_await write_due(true);
}

}  // namespace nvdra::k8s
