#include "k8s/lease_elector.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/multiple_exceptions.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "agent/base/log.hpp"
#include "k8s/cancellation.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
using asio::awaitable;

LeaseElector::LeaseElector(asio::any_io_executor ex, std::shared_ptr<ApiServer> api, LeaseElectorOptions options)
    : ex_(ex), api_(std::move(api)), options_(std::move(options)), state_timer_(ex) {
  state_timer_.expires_at(asio::steady_timer::time_point::max());
}

void LeaseElector::set_leader(bool value) {
  if (leader_ == value) return;
  leader_ = value;
  auto log = nvdra::logger("k8s");
  if (value) {
    ++stats_.acquisitions;
    log->info("lease {}/{}: {} became leader", options_.ns, options_.name, options_.identity);
  } else {
    ++stats_.losses;
    log->warn("lease {}/{}: {} is no longer leader (holder now: {})", options_.ns, options_.name, options_.identity,
              observed_.holder.empty() ? "none" : observed_.holder);
  }
  state_timer_.cancel();
  if (on_change_) on_change_(value);
}

awaitable<void> LeaseElector::wait_leader() {
  while (!leader_) {
    co_await state_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await throw_if_cancelled();
  }
}

awaitable<void> LeaseElector::wait_lost() {
  while (leader_) {
    co_await state_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await throw_if_cancelled();
  }
}

awaitable<void> LeaseElector::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(ex_, d);
  co_await timer.async_wait(asio::use_awaitable);
}

void LeaseElector::failed(const std::string& what, const ApiError& err) {
  ++stats_.failures;
  const std::string sentence =
      "lease " + options_.ns + "/" + options_.name + ": " + what + " failed: " + err.describe();
  nvdra::logger("k8s")->warn("{}", sentence);
  if (on_error_) on_error_(sentence);
}

awaitable<void> LeaseElector::run() {
  ChangeSignal changed(ex_);
  ReflectorOptions ro;
  ro.ns = options_.ns;
  ro.field_selector = "metadata.name=" + options_.name;
  Reflector watcher(ex_, api_, kLeasesV1, ro, &changed);
  try {
    try {
      using namespace asio::experimental::awaitable_operators;
      co_await (watcher.run() || elect(watcher, changed));
    } catch (const asio::multiple_exceptions& both) {
      std::rethrow_exception(both.first_exception());  // both ended by the cancellation
    }
  } catch (const boost::system::system_error& e) {
    if (e.code() != asio::error::operation_aborted || !leader_) throw;
  }
  // Cancelled while leading: hand the Lease back within release_timeout, then end as cancelled.
  co_await asio::this_coro::reset_cancellation_state();
  co_await asio::this_coro::throw_if_cancelled(false);
  {
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer deadline(ex_, options_.release_timeout);
    co_await (release() || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  }
  set_leader(false);
  throw boost::system::system_error(asio::error::operation_aborted);
}

void LeaseElector::observe(const Reflector& watcher) {
  const auto& objects = watcher.objects();
  auto it = objects.find(options_.ns + "/" + options_.name);
  if (it == objects.end()) return;
  auto stored = decode_lease(it->second.json);
  if (!stored || stored->record == observed_) return;
  observed_ = stored->record;
  observed_at_ = std::chrono::steady_clock::now();
}

awaitable<void> LeaseElector::elect(Reflector& watcher, ChangeSignal& changed) {
  auto last_attempt = std::chrono::steady_clock::time_point{};
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (!leader_ && watcher.synced()) {
      observe(watcher);
      // Wait for the holder's lease to run out by our clock, or for a release, or for a change.
      const bool present = watcher.objects().count(options_.ns + "/" + options_.name) != 0;
      const bool live_peer = present && !observed_.holder.empty() && observed_.holder != options_.identity;
      auto due = live_peer ? observed_at_ + std::chrono::seconds(observed_.lease_duration_seconds) : now;
      // After a lost race, give the watch a retry period to show the winner before trying again.
      due = std::max(due, last_attempt + options_.retry_period);
      if (due > now) {
        co_await changed.wait(due - now);
        continue;
      }
    }
    last_attempt = now;
    const bool held = co_await try_acquire_or_renew();
    const auto after = std::chrono::steady_clock::now();
    if (held) {
      if (leader_) ++stats_.renewals;
      last_renew_ = after;
      set_leader(true);
    } else if (leader_ && ((!observed_.holder.empty() && observed_.holder != options_.identity) ||
                           after - last_renew_ >= options_.renew_deadline)) {
      set_leader(false);
    }
    if (leader_ || !watcher.synced()) {
      // The leader renews every retry period; without a synced watch a follower polls as client-go
      // does, with jitter (client-go: JitterFactor 1.2) so that peers do not collide.
      auto delay = options_.retry_period;
      if (!leader_) {
        std::uniform_int_distribution<long long> jitter(0, delay.count() / 5);
        delay += std::chrono::milliseconds(jitter(rng_));
      }
      co_await sleep(delay);
    }
  }
}

awaitable<bool> LeaseElector::try_acquire_or_renew() {
  const auto wall_now = micro_time(std::chrono::system_clock::now());
  ObjectKey key;  // named locals: GCC 12 double-destroys braced temporaries passed to coroutines
  key.ns = options_.ns;
  key.name = options_.name;
  auto got = co_await api_->get(kLeasesV1, key);
  if (!got && got.error().not_found()) {
    LeaseRecord fresh;
    fresh.holder = options_.identity;
    fresh.lease_duration_seconds = options_.lease_duration.count();
    fresh.acquire_time = wall_now;
    fresh.renew_time = wall_now;
    auto created = co_await api_->create(kLeasesV1, options_.ns, encode_lease(options_.ns, options_.name, "", fresh));
    if (created) {
      observed_ = fresh;
      observed_at_ = std::chrono::steady_clock::now();
      co_return true;
    }
    if (created.error().conflict()) {
      ++stats_.conflicts;  // a peer created it first
    } else {
      failed("create", created.error());
    }
    co_return false;
  }
  if (!got) {
    failed("get", got.error());
    co_return false;
  }
  auto stored = decode_lease(*got);
  if (!stored) {
    ++stats_.failures;
    if (on_error_) on_error_("lease " + options_.ns + "/" + options_.name + ": " + stored.error().describe());
    co_return false;
  }
  const auto now = std::chrono::steady_clock::now();
  if (stored->record != observed_ || observed_at_ == std::chrono::steady_clock::time_point{}) {
    observed_ = stored->record;
    observed_at_ = now;
  }
  const bool mine = observed_.holder == options_.identity;
  const bool valid = now < observed_at_ + std::chrono::seconds(observed_.lease_duration_seconds);
  if (!observed_.holder.empty() && !mine && valid) co_return false;  // held by a live peer

  LeaseRecord next;
  next.holder = options_.identity;
  next.lease_duration_seconds = options_.lease_duration.count();
  next.renew_time = wall_now;
  next.acquire_time = mine ? observed_.acquire_time : wall_now;
  next.lease_transitions = mine ? observed_.lease_transitions : observed_.lease_transitions + 1;
  auto updated =
      co_await api_->update(kLeasesV1, key, encode_lease(options_.ns, options_.name, stored->meta.resource_version, next));
  if (updated) {
    observed_ = next;
    observed_at_ = std::chrono::steady_clock::now();
    co_return true;
  }
  if (updated.error().conflict()) {
    ++stats_.conflicts;  // a peer wrote in between: look again next round
  } else {
    failed("update", updated.error());
  }
  co_return false;
}

awaitable<void> LeaseElector::release() {
  ObjectKey key;
  key.ns = options_.ns;
  key.name = options_.name;
  auto got = co_await api_->get(kLeasesV1, key);
  if (!got) co_return;
  auto stored = decode_lease(*got);
  if (!stored || stored->record.holder != options_.identity) co_return;  // not ours any more
  // As client-go's release: no holder, a 1 s duration, the transitions kept.
  LeaseRecord released = stored->record;
  released.holder.clear();
  released.lease_duration_seconds = 1;
  released.renew_time = micro_time(std::chrono::system_clock::now());
  released.acquire_time = released.renew_time;
  auto updated = co_await api_->update(kLeasesV1, key,
                                       encode_lease(options_.ns, options_.name, stored->meta.resource_version, released));
  if (updated) {
    ++stats_.releases;
    observed_ = released;
    nvdra::logger("k8s")->info("lease {}/{}: {} released", options_.ns, options_.name, options_.identity);
  }
}

}  // namespace nvdra::k8s
