#include "k8s/reflector.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>

#include "agent/base/log.hpp"
#include "k8s/object_meta.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
using asio::awaitable;

std::chrono::seconds jittered_watch_timeout(std::chrono::seconds minimum, std::minstd_rand& rng) {
  if (minimum.count() <= 0) return minimum;
  std::uniform_int_distribution<long long> extra(0, minimum.count() - 1);
  return minimum + std::chrono::seconds(extra(rng));
}

Reflector::Reflector(asio::any_io_executor ex, std::shared_ptr<ApiServer> api, ResourceType type,
                     ReflectorOptions options, ChangeSignal* on_change)
    : ex_(std::move(ex)),
      api_(std::move(api)),
      type_(std::move(type)),
      options_(std::move(options)),
      on_change_(on_change),
      backoff_(options_.backoff_base, options_.backoff_cap),
      pacing_(options_.reconnect_pacing ? options_.reconnect_pacing : api_->reconnect_pacing()) {
  if (pacing_ && !pacing_->enabled()) pacing_.reset();
}

namespace {
std::chrono::milliseconds until(std::chrono::steady_clock::time_point t) {
  const auto left = t - std::chrono::steady_clock::now();
  // Rounded up: a timer that ended a fraction early would find the moment still ahead and wait 0.
  return std::max(std::chrono::ceil<std::chrono::milliseconds>(left), std::chrono::milliseconds{0});
}
}  // namespace

std::chrono::milliseconds Reflector::failure_pause() {
  if (pacing_ && pacing_->reconnecting()) return until(pacing_->failed(std::chrono::steady_clock::now()));
  return backoff_.next();
}

std::chrono::milliseconds Reflector::drop_pause(bool very_short) {
  if (!very_short) backoff_.reset();
  if (!pacing_) return backoff_.next();
  const auto now = std::chrono::steady_clock::now();
  return until(very_short && pacing_->reconnecting() ? pacing_->failed(now) : pacing_->lost(now));
}

void Reflector::changed() {
  if (on_change_ != nullptr) on_change_->notify();
}

bool Reflector::newer_or_equal(const std::string& incoming, const std::string& known) const {
  // resourceVersions are opaque, but every real server uses etcd revisions; compare them as numbers
  // when both are numbers (client-go's mutation cache does the same) and otherwise trust the event.
  uint64_t a = 0, b = 0;
  const bool pa = std::from_chars(incoming.data(), incoming.data() + incoming.size(), a).ec == std::errc();
  const bool pb = std::from_chars(known.data(), known.data() + known.size(), b).ec == std::errc();
  return !(pa && pb) || a >= b;
}

void Reflector::apply_local(const std::string& key, std::string resource_version, std::string json) {
  auto& e = objects_[key];
  if (!e.resource_version.empty() && !newer_or_equal(resource_version, e.resource_version)) return;
  tombstones_.erase(key);
  e = Entry{std::move(resource_version), std::move(json)};
}

void Reflector::erase_local(const std::string& key, const std::string& resource_version) {
  objects_.erase(key);
  tombstones_[key] = resource_version;
}

awaitable<void> Reflector::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(ex_, d);
  co_await timer.async_wait(asio::use_awaitable);
}

awaitable<void> Reflector::run() {
  // No co_await inside conditions: GCC 12 miscompiles those in coroutines.
  bool waited = !options_.before_first_watch;
  for (;;) {
    const bool listed = co_await list();
    if (!listed) continue;
    if (!waited) {
      waited = true;
      co_await options_.before_first_watch();
    }
    for (;;) {
      const Next next = co_await watch();
      if (next == Next::kRelist) break;
    }
  }
}

awaitable<bool> Reflector::list() {
  ++stats_.lists;
  // Named locals, not braced temporaries, as coroutine arguments: GCC 12 destroys such temporaries
  // twice (GCC PR 99576).
  ListOptions lo;
  lo.field_selector = options_.field_selector;
  lo.label_selector = options_.label_selector;
  auto res = co_await api_->list(type_, options_.ns, lo);
  if (!res) {
    ++stats_.errors;
    const auto& err = res.error();
    const auto delay = err.too_many_requests() && err.retry_after.count() > 0 ? err.retry_after : failure_pause();
    nvdra::logger("k8s")->warn("list {} failed: {}; retrying in {} ms", type_.plural, err.describe(), delay.count());
    co_await sleep(delay);
    co_return false;
  }
  std::map<std::string, Entry> fresh;
  for (auto& item : res->items) {
    auto meta = read_object_meta(item);
    if (!meta) continue;
    fresh[meta->key()] = Entry{meta->resource_version, std::move(item)};
  }
  objects_ = std::move(fresh);
  tombstones_.clear();
  resource_version_ = res->resource_version;
  synced_ = true;
  if (pacing_) pacing_->connected();
  changed();
  co_return true;
}

// A watch that could not be opened, or an ERROR event: 410 Gone lists again; anything else pauses
// (the server's Retry-After when it gave one) and resumes from the last version.
awaitable<Reflector::Next> Reflector::after_error(const ApiError& err, std::string_view what) {
  if (err.gone() || err.http_status == 410) {
    ++stats_.relists_after_gone;
    co_return Next::kRelist;
  }
  ++stats_.errors;
  const auto delay = err.too_many_requests() && err.retry_after.count() > 0 ? err.retry_after : failure_pause();
  nvdra::logger("k8s")->warn("watch {} {} {}; retrying in {} ms", type_.plural, what, err.describe(), delay.count());
  co_await sleep(delay);
  co_return Next::kResume;
}

// Always a jittered pause after a drop: when a server restart cuts every agent at once they come
// back spread over the reconnect window instead of together; a very short watch keeps it growing.
awaitable<void> Reflector::after_drop(const ApiError& err, bool very_short) {
  ++stats_.resumes;
  const auto delay = drop_pause(very_short);
  ++stats_.drops;
  stats_.last_drop_pause = delay;
  nvdra::logger("k8s")->info("watch {} dropped: {}; resuming in {} ms", type_.plural, err.describe(), delay.count());
  co_await sleep(delay);
}

// An ADDED, MODIFIED or DELETED event into the cache; one older than what is known (or than a local
// deletion's tombstone) is ignored.
void Reflector::apply_event(WatchEvent& ev) {
  const auto key = ev.ns.empty() ? ev.name : ev.ns + "/" + ev.name;
  auto it = objects_.find(key);
  if (ev.type == WatchEventType::kDeleted) {
    if (it != objects_.end() && newer_or_equal(ev.resource_version, it->second.resource_version)) {
      objects_.erase(it);
      changed();
    }
    return;
  }
  if (auto t = tombstones_.find(key); t != tombstones_.end() && !newer_or_equal(ev.resource_version, t->second)) return;
  if (it != objects_.end() && !newer_or_equal(ev.resource_version, it->second.resource_version)) return;
  const bool same = it != objects_.end() && it->second.resource_version == ev.resource_version;
  objects_[key] = Entry{ev.resource_version, std::move(ev.object)};
  if (!same) changed();
}

awaitable<Reflector::Next> Reflector::watch() {
  ++stats_.watches;
  WatchOptions wo;
  wo.field_selector = options_.field_selector;
  wo.label_selector = options_.label_selector;
  wo.resource_version = resource_version_;
  wo.timeout = jittered_watch_timeout(options_.watch_timeout, rng_);
  wo.max_event_bytes = options_.max_event_bytes;
  auto opened = co_await api_->watch(type_, options_.ns, wo);
  auto log = nvdra::logger("k8s");
  if (!opened) co_return co_await after_error(opened.error(), "failed:");
  auto stream = std::move(*opened);
  const auto opened_at = std::chrono::steady_clock::now();
  bool any_event = false;
  for (;;) {
    auto next = co_await stream->next();
    if (!next) {
      const auto& err = next.error();
      if (err.reason == kReasonEventTooLarge || err.reason == kReasonBadResponse) {
        ++stats_.skipped_events;
        log->error("watch {}: {}, skipping that event", type_.plural, err.describe());
        continue;
      }
      // A watch that died young without an event (client-go's "very short watch") is a failure.
      co_await after_drop(err, !any_event && std::chrono::steady_clock::now() - opened_at < std::chrono::seconds(1));
      co_return Next::kResume;
    }
    if (!*next) {
      ++stats_.resumes;
      backoff_.reset();  // a clean end (timeoutSeconds reached): the server is healthy
      if (pacing_) pacing_->connected();
      co_return Next::kResume;  // resume from the last version
    }
    if (!any_event && pacing_) pacing_->connected();
    any_event = true;
    auto& ev = **next;
    switch (ev.type) {
      case WatchEventType::kBookmark: break;
      case WatchEventType::kError: co_return co_await after_error(decode_status(0, ev.object), "error event:");
      case WatchEventType::kAdded:
      case WatchEventType::kModified:
      case WatchEventType::kDeleted: apply_event(ev); break;
    }
    if (!ev.resource_version.empty()) resource_version_ = ev.resource_version;
  }
}

}  // namespace nvdra::k8s
