#include "agent/systemd_bus/bus_connection.hpp"

#include <poll.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstring>

#include "agent/base/log.hpp"
#include "agent/base/backoff.hpp"

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;

namespace nvdra::systemd_bus {

// A connect hook or a match rule. Matches keep the sd-bus slot of the current connection.
struct BusConnection::Entry : std::enable_shared_from_this<BusConnection::Entry> {
  ConnectHook hook;
  std::string rule;
  SignalHandler handler;
  sd_bus_slot* slot = nullptr;
  ~Entry() { sd_bus_slot_unref(slot); }
};

// One call in flight. The timer is an event: the reply callback cancels it to wake the caller.
struct BusConnection::PendingCall {
  explicit PendingCall(asio::any_io_executor ex) : done(ex, asio::steady_timer::time_point::max()) {}
  ~PendingCall() { sd_bus_slot_unref(slot); }
  asio::steady_timer done;
  sd_bus_slot* slot = nullptr;
  Message reply;
  bool finished = false;
};

namespace {

constexpr int kProcessBatch = 64;  // messages handled before yielding to the rest of the loop

int on_signal(sd_bus_message* m, void* userdata, sd_bus_error*) {
  // Keep the entry alive while its handler runs: the handler may drop its own Subscription.
  auto entry = static_cast<BusConnection::Entry*>(userdata)->shared_from_this();
  auto msg = Message::ref(m);
  if (entry->handler) entry->handler(msg);
  return 0;
}

std::chrono::microseconds until_monotonic(uint64_t usec) {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000ULL + static_cast<uint64_t>(ts.tv_nsec) / 1000ULL;
  return std::chrono::microseconds(usec > now ? usec - now : 0);
}

ErrorCode code_for_dbus_error(const std::string& name) {
  if (name == SD_BUS_ERROR_ACCESS_DENIED || name == "org.freedesktop.DBus.Error.AuthFailed")
    return ErrorCode::kPermissionDenied;
  if (name == SD_BUS_ERROR_SERVICE_UNKNOWN || name == SD_BUS_ERROR_NAME_HAS_NO_OWNER ||
      name == SD_BUS_ERROR_UNKNOWN_OBJECT || name == SD_BUS_ERROR_UNKNOWN_METHOD ||
      name == SD_BUS_ERROR_UNKNOWN_INTERFACE || name == SD_BUS_ERROR_UNKNOWN_PROPERTY ||
      name == "org.freedesktop.systemd1.NoSuchUnit" || name.ends_with(".Error.NotFound"))
    return ErrorCode::kNotFound;
  if (name == SD_BUS_ERROR_NO_REPLY || name == SD_BUS_ERROR_TIMEOUT || name == SD_BUS_ERROR_DISCONNECTED ||
      name == "org.freedesktop.DBus.Error.Timeout")
    return ErrorCode::kUnavailable;
  return ErrorCode::kInternal;
}

}  // namespace

std::string BusEndpoint::describe() const {
  switch (kind) {
    case Kind::kSystem: return "system bus";
    case Kind::kUser: return "user bus";
    case Kind::kAddress: return "bus " + address;
  }
  return "bus";
}

std::string MethodCall::describe() const { return destination + " " + path + ": " + interface + "." + member; }

BusConnection::Subscription::Subscription(Subscription&& other) noexcept : owner_(other.owner_), it_(other.it_) {
  other.owner_ = nullptr;
}

BusConnection::Subscription& BusConnection::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    it_ = other.it_;
    other.owner_ = nullptr;
  }
  return *this;
}

void BusConnection::Subscription::reset() {
  if (owner_) owner_->remove(it_);
  owner_ = nullptr;
}

BusConnection::BusConnection(asio::any_io_executor ex, BusEndpoint endpoint)
    : ex_(std::move(ex)), endpoint_(std::move(endpoint)), log_(nvdra::logger("dbus")) {}

BusConnection::~BusConnection() { close(); }

Status BusConnection::open() {
  sd_bus* b = nullptr;
  int r = 0;
  ++attempts_;
  switch (endpoint_.kind) {
    case BusEndpoint::Kind::kSystem: r = sd_bus_open_system(&b); break;
    case BusEndpoint::Kind::kUser: r = sd_bus_open_user(&b); break;
    case BusEndpoint::Kind::kAddress:
      r = sd_bus_new(&b);
      if (r >= 0) r = sd_bus_set_address(b, endpoint_.address.c_str());
      if (r >= 0) r = sd_bus_set_bus_client(b, 1);
      if (r >= 0) r = sd_bus_start(b);
      break;
  }
  if (r < 0) {
    sd_bus_unref(b);
    return errno_error(r, "cannot connect to the " + endpoint_.describe());
  }
  // The agent decides what a lost bus means (reconnect), not libsystemd (exit).
  sd_bus_set_exit_on_disconnect(b, 0);
  bus_ = b;
  ++generation_;
  for (auto& entry : entries_) apply(*entry);
  // Wake wait_connected() callers; each removes its own entry when it resumes.
  for (auto& wake : waiters_) wake();
  return {};
}

void BusConnection::apply(Entry& entry) {
  if (entry.hook) {
    if (auto st = entry.hook(bus_); !st)
      log_->warn("setting up the {} connection failed: {}, ignoring", endpoint_.describe(), st.error().message);
    return;
  }
  sd_bus_slot_unref(entry.slot);
  entry.slot = nullptr;
  const int r = sd_bus_add_match_async(bus_, &entry.slot, entry.rule.c_str(), on_signal, nullptr, &entry);
  if (r < 0) log_->warn("cannot add match rule=\"{}\": {}, ignoring", entry.rule, std::strerror(-r));
}

void BusConnection::close() {
  for (auto& entry : entries_) {
    sd_bus_slot_unref(entry->slot);
    entry->slot = nullptr;
  }
  // Calls in flight can no longer be answered: fail them now rather than leave callers waiting.
  for (PendingCall* p : pending_) {
    p->done.cancel();
  }
  pending_.clear();
  if (bus_) bus_ = sd_bus_flush_close_unref(bus_);
}

BusConnection::Subscription BusConnection::add_connect_hook(ConnectHook hook) {
  auto entry = std::make_shared<Entry>();
  entry->hook = std::move(hook);
  auto it = entries_.insert(entries_.end(), entry);
  if (bus_) apply(*entry);
  return Subscription(this, it);
}

BusConnection::Subscription BusConnection::add_match(std::string rule, SignalHandler handler) {
  auto entry = std::make_shared<Entry>();
  entry->rule = std::move(rule);
  entry->handler = std::move(handler);
  auto it = entries_.insert(entries_.end(), entry);
  if (bus_) apply(*entry);
  return Subscription(this, it);
}

void BusConnection::remove(std::list<std::shared_ptr<Entry>>::iterator it) {
  sd_bus_slot_unref((*it)->slot);
  (*it)->slot = nullptr;
  entries_.erase(it);
}

asio::awaitable<void> BusConnection::run() {
  Backoff backoff(std::chrono::milliseconds(100), std::chrono::seconds(30));
  asio::steady_timer pause(ex_);
  struct Closer {
    BusConnection* self;
    ~Closer() { self->close(); }
  } closer{this};
  for (;;) {
    if (auto st = open(); !st) {
      if (!reported_unavailable_) {
        log_->warn("{}; D-Bus features (status service, IMEX unit checks) are off until it comes back, "
                   "retrying with backoff, ignoring", st.error().message);
        reported_unavailable_ = true;
      } else {
        log_->debug("{}", st.error().message);
      }
    } else {
      const bool accepted = co_await serve();
      close();
      if (accepted) {
        backoff.reset();
        reported_unavailable_ = false;
        log_->warn("lost the {} connection; reconnecting", endpoint_.describe());
      } else if (!reported_unavailable_) {
        log_->warn("the {} refused or dropped the connection before accepting it; retrying with backoff, ignoring",
                   endpoint_.describe());
        reported_unavailable_ = true;
      }
    }
    pause.expires_after(backoff.next());
    co_await pause.async_wait(asio::use_awaitable);  // operation_aborted on cancellation
  }
}

asio::awaitable<bool> BusConnection::serve() {
  asio::posix::stream_descriptor fd(ex_, sd_bus_get_fd(bus_));
  // sd-bus owns the socket: hand it back before asio would close it.
  struct Release {
    asio::posix::stream_descriptor& fd;
    ~Release() { fd.release(); }
  } release{fd};
  asio::steady_timer timeout(ex_);
  bool accepted = false;
  for (;;) {
    for (int handled = 0;;) {
      const int r = sd_bus_process(bus_, nullptr);
      if (!accepted && sd_bus_is_ready(bus_) > 0) {
        accepted = true;
        if (reported_unavailable_ || generation_ > 1) log_->info("connected to the {}", endpoint_.describe());
      }
      if (r < 0) {
        log_->debug("{} closed: {}", endpoint_.describe(), std::strerror(-r));
        co_return accepted;
      }
      if (r == 0) break;
      if (++handled % kProcessBatch == 0) co_await asio::post(ex_, asio::use_awaitable);
    }
    if (sd_bus_is_open(bus_) <= 0) co_return accepted;
    const int events = sd_bus_get_events(bus_);
    uint64_t usec = UINT64_MAX;
    if (events < 0 || sd_bus_get_timeout(bus_, &usec) < 0) co_return accepted;
    if (usec == UINT64_MAX) timeout.expires_at(asio::steady_timer::time_point::max());
    else timeout.expires_after(until_monotonic(usec));

    using W = asio::posix::stream_descriptor;
    if ((events & POLLIN) && (events & POLLOUT)) {
      co_await (fd.async_wait(W::wait_read, asio::use_awaitable) ||
                fd.async_wait(W::wait_write, asio::use_awaitable) || timeout.async_wait(asio::use_awaitable));
    } else if (events & POLLOUT) {
      co_await (fd.async_wait(W::wait_write, asio::use_awaitable) || timeout.async_wait(asio::use_awaitable));
    } else {
      co_await (fd.async_wait(W::wait_read, asio::use_awaitable) || timeout.async_wait(asio::use_awaitable));
    }
  }
}

asio::awaitable<void> BusConnection::wait_connected() {
  if (bus_) co_return;
  asio::steady_timer wake(ex_, asio::steady_timer::time_point::max());
  auto it = waiters_.insert(waiters_.end(), [&wake] { wake.cancel(); });
  struct Forget {
    std::list<std::function<void()>>& list;
    std::list<std::function<void()>>::iterator it;
    ~Forget() { list.erase(it); }
  } forget{waiters_, it};
  boost::system::error_code ec;
  co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none)
    throw boost::system::system_error(asio::error::operation_aborted);
}

asio::awaitable<Result<Message>> BusConnection::call(MethodCall c) {
  if (!bus_) co_return make_error(ErrorCode::kUnavailable, c.describe() + ": not connected to the " + endpoint_.describe());
  sd_bus_message* raw_msg = nullptr;
  int r = sd_bus_message_new_method_call(bus_, &raw_msg, c.destination.empty() ? nullptr : c.destination.c_str(),
                                         c.path.c_str(), c.interface.empty() ? nullptr : c.interface.c_str(),
                                         c.member.c_str());
  if (r < 0) co_return errno_error(r, c.describe());
  auto msg = Message::adopt(raw_msg);
  if (c.append && (r = c.append(raw_msg)) < 0) co_return errno_error(r, c.describe() + ": arguments");

  auto pending = std::make_unique<PendingCall>(ex_);
  auto on_reply = [](sd_bus_message* m, void* userdata, sd_bus_error*) -> int {
    auto* p = static_cast<PendingCall*>(userdata);
    p->reply = Message::ref(m);
    p->finished = true;
    p->done.cancel();
    return 0;
  };
  const auto usec = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(c.timeout).count());
  r = sd_bus_call_async(bus_, &pending->slot, raw_msg, on_reply, pending.get(), usec);
  if (r < 0) co_return errno_error(r, c.describe());
  pending_.push_back(pending.get());
  boost::system::error_code ec;
  co_await pending->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  // close() clears the list itself; otherwise this call removes its own entry.
  if (auto found = std::find(pending_.begin(), pending_.end(), pending.get()); found != pending_.end())
    pending_.erase(found);
  if (!pending->finished) {
    auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none)
      throw boost::system::system_error(asio::error::operation_aborted);  // the slot unref cancels the call
    co_return make_error(ErrorCode::kUnavailable, c.describe() + ": the " + endpoint_.describe() + " connection closed");
  }
  const sd_bus_error* err = sd_bus_message_get_error(pending->reply.get());
  if (err != nullptr) {
    const std::string name = err->name ? err->name : "";
    co_return make_error(code_for_dbus_error(name),
                         c.describe() + ": " + name + (err->message ? std::string(": ") + err->message : ""));
  }
  co_return std::move(pending->reply);
}

asio::awaitable<Result<Message>> BusConnection::get_property(std::string destination, std::string path,
                                                             std::string interface, std::string property,
                                                             const char* signature) {
  MethodCall c{destination, path, "org.freedesktop.DBus.Properties", "Get",
               [&interface, &property](sd_bus_message* m) {
                 return sd_bus_message_append(m, "ss", interface.c_str(), property.c_str());
               },
               std::chrono::milliseconds(25000)};
  auto reply = co_await call(std::move(c));
  if (!reply) co_return reply;
  if (auto st = reply->enter_variant(signature); !st)
    co_return make_error(ErrorCode::kInvalidArgument, destination + " " + path + ": property " + interface + "." +
                                                          property + ": " + st.error().message);
  co_return reply;
}

asio::awaitable<Result<std::string>> BusConnection::get_string_property(std::string destination, std::string path,
                                                                        std::string interface, std::string property) {
  auto reply = co_await get_property(destination, path, interface, property, "s");
  if (!reply) co_return reply.error();
  co_return reply->read_string();
}

}  // namespace nvdra::systemd_bus
