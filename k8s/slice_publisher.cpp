#include "k8s/slice_publisher.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "k8s/cancellation.hpp"
#include "k8s/object_meta.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
using asio::awaitable;

SlicePublisher::SlicePublisher(asio::any_io_executor ex, std::shared_ptr<ApiServer> api, PublisherOptions options)
    : ex_(ex), api_(std::move(api)), options_(std::move(options)), signal_(ex), converged_timer_(ex) {
  converged_timer_.expires_at(asio::steady_timer::time_point::max());
}

SlicePublisher::~SlicePublisher() = default;

void SlicePublisher::set_desired(DriverResources desired) {
  if (desired_ && *desired_ == desired) return;
  desired_ = std::move(desired);
  set_converged(false);
  signal_.notify();
}

void SlicePublisher::set_converged(bool value) {
  if (converged_ == value) return;
  converged_ = value;
  if (value) {
    converged_timer_.cancel();  // wakes every wait_converged()
    if (on_converged_) on_converged_();
  }
}

awaitable<void> SlicePublisher::wait_converged() {
  while (!converged_) {
    co_await converged_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await throw_if_cancelled();
  }
}

awaitable<void> SlicePublisher::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(ex_, d);
  co_await timer.async_wait(asio::use_awaitable);
}

awaitable<void> SlicePublisher::bootstrap() {
  if (!options_.facts) {
    options_.facts = std::make_shared<ServerFacts>(
        ex_, api_, ServerFactsOptions{options_.node_name, options_.backoff_base, options_.backoff_cap, {}});
  }
  const ServerFacts::Facts facts = co_await options_.facts->get();  // a named local: GCC 12 temporaries
  version_ = facts.version;
  node_uid_ = facts.node_uid;
  if (!options_.rules) options_.rules = rules_for(*version_, facts.served);
  if (options_.layout) options_.rules->layout = *options_.layout;
  auto log = nvdra::logger("k8s");
  log->info("publishing ResourceSlices driver={} node={} server={} (counter sets {}, list attributes {}, "
            "consumable capacity {})",
            options_.driver, options_.node_name, version_->git_version,
            options_.rules->layout == CounterLayout::kSeparateSlices ? "in slices of their own" : "with their devices",
            options_.rules->list_attributes ? "served" : "not served",
            options_.rules->multiple_allocations ? "served" : "not served");
}

void SlicePublisher::note_dropped(const SliceObject& sent, const std::string& stored_json) {
  auto stored = decode_slice(stored_json);
  if (!stored) return;
  const auto dropped = fields_dropped(sent.content, stored->content);
  if (!dropped.any()) return;
  auto log = nvdra::logger("k8s");
  // The server serves the field but its feature gate is off: stop sending it, or every
  // reconcile would find the stored slice different and write it again.
  if (dropped.list_attributes) {
    options_.rules->list_attributes = false;
    log->warn("driver={} the API server dropped list-valued attributes (its DRAListTypeAttributes gate is off); "
              "publishing single values instead", options_.driver);
  }
  if (dropped.multiple_allocations) {
    options_.rules->multiple_allocations = false;
    log->warn("driver={} the API server dropped allowMultipleAllocations (its DRAConsumableCapacity gate is off); "
              "devices are published for one claim each", options_.driver);
  }
}

awaitable<void> SlicePublisher::run() {
  watch_ = options_.watch;
  if (!watch_) {
    watch_ = std::make_shared<SliceWatch>(
        ex_, api_,
        SliceWatchOptions{options_.node_name, options_.driver, options_.watch_timeout, options_.backoff_base,
                          options_.backoff_cap});
  }
  watching_ = true;
  using namespace asio::experimental::awaitable_operators;
  // The slice LIST and WATCH need nothing from the bootstrap: they run alongside it, and the loop
  // writes once both have answered.
  co_await (watch_->serve(signal_) || bootstrap_then_loop());
}

awaitable<void> SlicePublisher::bootstrap_then_loop() {
  co_await bootstrap();
  co_await loop();
}

awaitable<void> SlicePublisher::loop() {
  Backoff backoff(options_.backoff_base, options_.backoff_cap);
  int conflicts_in_a_row = 0;
  for (;;) {
    if (!desired_ || !watch_->reflector().synced()) {
      co_await signal_.wait();
      continue;
    }
    const Outcome outcome = co_await reconcile_once();  // not in the switch: GCC 12 coroutine bug
    switch (outcome) {
      case Outcome::kConverged:
        backoff.reset();
        conflicts_in_a_row = 0;
        set_converged(true);
        co_await signal_.wait();
        break;
      case Outcome::kProgress:
        backoff.reset();
        conflicts_in_a_row = 0;
        break;
      case Outcome::kConflict:
        // Retry at once on the fresh state; keep retrying bounded by backoff if conflicts persist.
        if (++conflicts_in_a_row > 3) co_await sleep(backoff.next());
        break;
      case Outcome::kFailed:
        co_await sleep(backoff.next());
        break;
    }
  }
}

awaitable<void> SlicePublisher::refresh(std::string name) {
  ObjectKey key;
  key.name = name;
  auto fresh = co_await api_->get(kResourceSlicesV1, key);
  if (fresh) {
    if (auto meta = read_object_meta(*fresh))
      watch_->reflector().apply_local(name, meta->resource_version, std::move(*fresh));
  } else if (fresh.error().not_found()) {
    watch_->reflector().erase_local(name, watch_->reflector().last_resource_version());
  }
}

awaitable<SlicePublisher::Outcome> SlicePublisher::reconcile_once() {
  ++stats_.reconciles;
  auto log = nvdra::logger("k8s");
  std::vector<SliceObject> actual;
  for (const auto& [key, entry] : watch_->reflector().objects()) {
    // The shared watch holds every driver's slices on the node: this publisher keeps to its own,
    // and decodes only those.
    if (SliceWatch::driver_of(entry.json) != options_.driver) continue;
    auto slice = decode_slice(entry.json);
    if (slice) {
      actual.push_back(std::move(*slice));
    } else {
      // Unreadable but ours (spec.driver): plan_writes removes it as a stale slice.
      log->warn("driver={} {}; it will be replaced", options_.driver, slice.error().describe());
      SliceObject stale;
      if (auto meta = read_object_meta(entry.json)) {
        stale.name = meta->name;
        stale.uid = meta->uid;
        stale.resource_version = meta->resource_version;
      }
      actual.push_back(std::move(stale));
    }
  }
  const auto desired = plan_slices(*desired_, *options_.rules);
  const auto plan = plan_writes(desired, actual, PoolIdentity{options_.driver, options_.node_name, node_uid_});
  if (plan.empty()) {
    // Once per change: an operator (and a test) sees when the writes that "reconciling" announced are done.
    if (!converged_)
      log->info("driver={} node={} in sync: {} ResourceSlice(s) as desired, generation {}", options_.driver,
                options_.node_name, actual.size(), plan.generation);
    co_return Outcome::kConverged;
  }
  set_converged(false);
  log->info("driver={} node={} reconciling: {} delete(s), {} update(s), {} create(s), generation {}", options_.driver,
            options_.node_name, plan.deletes.size(), plan.updates.size(), plan.creates.size(), plan.generation);

  auto failed = [&](const char* verb, const std::string& name, const ApiError& err) {
    ++stats_.failures;
    log->warn("driver={} {} ResourceSlice {} failed: {}; retrying", options_.driver, verb, name, err.describe());
    return Outcome::kFailed;
  };
  // Order as upstream: delete obsolete slices, then update, then create.
  for (const auto& s : plan.deletes) {
    ObjectKey key;
    key.name = s.name;
    Preconditions pre;
    pre.uid = s.uid;
    pre.resource_version = s.resource_version;
    auto res = co_await api_->remove(kResourceSlicesV1, key, pre);
    if (res || res.error().not_found()) {
      ++stats_.deletes;
      watch_->reflector().erase_local(s.name, s.resource_version);
      continue;
    }
    if (res.error().conflict()) {
      ++stats_.conflicts;
      co_await refresh(s.name);
      co_return Outcome::kConflict;
    }
    co_return failed("delete", s.name, res.error());
  }
  for (const auto& s : plan.updates) {
    ObjectKey key;
    key.name = s.name;
    auto res = co_await api_->update(kResourceSlicesV1, key, encode_slice(s));
    if (res) {
      ++stats_.updates;
      note_dropped(s, *res);
      if (auto meta = read_object_meta(*res))
        watch_->reflector().apply_local(s.name, meta->resource_version, std::move(*res));
      continue;
    }
    if (res.error().conflict() || res.error().not_found()) {
      ++stats_.conflicts;
      co_await refresh(s.name);
      co_return Outcome::kConflict;
    }
    co_return failed("update", s.name, res.error());
  }
  for (const auto& s : plan.creates) {
    auto res = co_await api_->create(kResourceSlicesV1, std::string(), encode_slice(s));
    if (!res) co_return failed("create", s.generate_name + "*", res.error());
    ++stats_.creates;
    note_dropped(s, *res);
    if (auto meta = read_object_meta(*res))
      watch_->reflector().apply_local(meta->name, meta->resource_version, std::move(*res));
  }
  co_return Outcome::kProgress;
}

}  // namespace nvdra::k8s
