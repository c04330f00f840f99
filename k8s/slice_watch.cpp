#include "k8s/slice_watch.hpp"

#include <simdjson.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "k8s/cancellation.hpp"

namespace nvdra::k8s {
namespace {

namespace asio = boost::asio;

std::string selector_for(const SliceWatchOptions& o) {
  return "spec.nodeName=" + o.node_name + (o.driver.empty() ? std::string() : ",spec.driver=" + o.driver);
}

ReflectorOptions reflector_options(const SliceWatchOptions& o) {
  ReflectorOptions ro;
  ro.field_selector = selector_for(o);
  ro.watch_timeout = o.watch_timeout;
  ro.backoff_base = o.backoff_base;
  ro.backoff_cap = o.backoff_cap;
  ro.before_first_watch = o.before_first_watch;
  return ro;
}

}  // namespace

SliceWatch::SliceWatch(asio::any_io_executor ex, std::shared_ptr<ApiServer> api, SliceWatchOptions options)
    : selector_(selector_for(options)),
      changed_(ex),
      reflector_(ex, std::move(api), kResourceSlicesV1, reflector_options(options), &changed_),
      handoff_(ex) {
  handoff_.expires_at(asio::steady_timer::time_point::max());
}

asio::awaitable<void> SliceWatch::fan_out() {
  for (;;) {
    co_await changed_.wait();
    for (auto* s : subscribers_) s->notify();
  }
}

asio::awaitable<void> SliceWatch::serve(ChangeSignal& changed) {
  using namespace asio::experimental::awaitable_operators;
  subscribers_.push_back(&changed);
  struct Leave {
    SliceWatch* w;
    ChangeSignal* s;
    ~Leave() { w->subscribers_.erase(std::find(w->subscribers_.begin(), w->subscribers_.end(), s)); }
  } leave{this, &changed};
  if (reflector_.synced()) changed.notify();
  for (;;) {
    if (!running_) {
      running_ = true;
      struct HandOff {
        SliceWatch* w;
        ~HandOff() {
          w->running_ = false;
          w->handoff_.cancel();  // wakes every caller waiting below: one of them runs it now
        }
      } hand_off{this};
      co_await (reflector_.run() || fan_out());
    } else {
      co_await handoff_.async_wait(asio::as_tuple(asio::use_awaitable));
      co_await throw_if_cancelled();
    }
  }
}

std::string SliceWatch::driver_of(std::string_view json) {
  thread_local simdjson::ondemand::parser parser;  // once per thread: a reconcile reads every slice
  simdjson::padded_string padded(json);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object spec;
  std::string_view driver;
  if (parser.iterate(padded).get(doc) || doc["spec"].get_object().get(spec) ||
      spec.find_field_unordered("driver").get_string().get(driver))
    return {};
  return std::string(driver);
}

}  // namespace nvdra::k8s
