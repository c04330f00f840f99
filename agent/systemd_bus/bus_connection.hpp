#pragma once
// BusConnection — one sd-bus connection driven by the agent's io_context (STYLE.md §4; the
// pattern of openbmc sdbusplus asio::connection). run() connects, then waits on the bus fd for the
// events sd_bus_get_events asks for, or on a steady_timer for sd_bus_get_timeout, and calls
// sd_bus_process until it reports no more work. When the peer goes away it reconnects with
// backoff; when there is no bus at all it says so once (warn) and keeps trying quietly.
//
// Contract: every method runs on the io_context thread. Connect hooks and match rules are kept
// across reconnects and re-applied on each new connection. Calls made while disconnected fail
// with ErrorCode::kUnavailable. Errors from the peer come back as values (Result), never thrown;
// run() ends on cancellation (operation_aborted), closing the connection first.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "agent/base/result.hpp"
#include "agent/systemd_bus/bus_message.hpp"

struct sd_bus;
struct sd_bus_slot;

namespace spdlog { class logger; }

namespace nvdra::systemd_bus {

// Which bus to talk to. kSystem honours DBUS_SYSTEM_BUS_ADDRESS (tests point it at a private
// dbus-daemon), kUser DBUS_SESSION_BUS_ADDRESS; kAddress takes an explicit "unix:path=…".
struct BusEndpoint {
  enum class Kind { kSystem, kUser, kAddress };
  Kind kind = Kind::kSystem;
  std::string address;
  std::string describe() const;  // "system bus", "user bus", "bus unix:path=…"
};

// A D-Bus method call. `append` adds the arguments (sd_bus_message_append); it may be empty.
struct MethodCall {
  std::string destination;
  std::string path;
  std::string interface;
  std::string member;
  std::function<int(sd_bus_message*)> append;
  std::chrono::milliseconds timeout{25000};
  std::string describe() const;  // "org.freedesktop.systemd1 /org/…: org.…Manager.GetUnit"
};

class BusConnection {
 public:
  // Runs after each successful (re)connect, before anything else is processed: register objects,
  // request names. A failing hook is logged once per connection; the connection stays up.
  using ConnectHook = std::function<Status(sd_bus*)>;
  using SignalHandler = std::function<void(Message&)>;

  struct Entry;
  // Keeps a connect hook or a match rule in force while it lives; destroying it removes it. It
  // must not outlive the connection.
  class Subscription {
   public:
    Subscription() = default;
    ~Subscription() { reset(); }
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    void reset();

   private:
    friend class BusConnection;
    Subscription(BusConnection* owner, std::list<std::shared_ptr<Entry>>::iterator it) : owner_(owner), it_(it) {}
    BusConnection* owner_ = nullptr;
    std::list<std::shared_ptr<Entry>>::iterator it_{};
  };

  BusConnection(boost::asio::any_io_executor ex, BusEndpoint endpoint);
  ~BusConnection();
  BusConnection(const BusConnection&) = delete;
  BusConnection& operator=(const BusConnection&) = delete;

  // Connects and serves until cancelled; reconnects with capped backoff in between.
  boost::asio::awaitable<void> run();

  // Hooks and matches outlive reconnects. Adding either while connected applies it at once.
  [[nodiscard]] Subscription add_connect_hook(ConnectHook hook);
  [[nodiscard]] Subscription add_match(std::string rule, SignalHandler handler);

  // One method call; the reply, or the D-Bus error mapped onto an Error that names the call.
  boost::asio::awaitable<Result<Message>> call(MethodCall call);
  // org.freedesktop.DBus.Properties.Get; the reply is positioned inside the variant.
  boost::asio::awaitable<Result<Message>> get_property(std::string destination, std::string path,
                                                       std::string interface, std::string property,
                                                       const char* signature);
  boost::asio::awaitable<Result<std::string>> get_string_property(std::string destination, std::string path,
                                                                  std::string interface, std::string property);
  // Suspends until connected (at once if already). Ends with operation_aborted on cancellation.
  boost::asio::awaitable<void> wait_connected();

  bool connected() const { return bus_ != nullptr; }
  sd_bus* raw() const { return bus_; }  // null while disconnected
  const BusEndpoint& endpoint() const { return endpoint_; }
  // How many connections run() has made so far (tests and status).
  uint64_t generation() const { return generation_; }
  // How many times run() has tried to connect, successful or not.
  uint64_t attempts() const { return attempts_; }

 private:
  struct PendingCall;
  Status open();
  void close();
  void apply(Entry& entry);
  void remove(std::list<std::shared_ptr<Entry>>::iterator it);
  // Returns true when the connection got as far as the bus accepting us (Hello answered).
  boost::asio::awaitable<bool> serve();

  boost::asio::any_io_executor ex_;
  BusEndpoint endpoint_;
  std::shared_ptr<spdlog::logger> log_;
  sd_bus* bus_ = nullptr;
  std::list<std::shared_ptr<Entry>> entries_;  // hooks and matches, in the order added
  std::list<PendingCall*> pending_;            // calls awaiting a reply, failed on close()
  std::list<std::function<void()>> waiters_;   // wake-ups of wait_connected() callers
  uint64_t generation_ = 0;
  uint64_t attempts_ = 0;
  bool reported_unavailable_ = false;
};

}  // namespace nvdra::systemd_bus
