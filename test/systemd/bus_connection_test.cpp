// BusConnection against a real dbus-daemon of the test's own: calls, property reads, signal
// matches, reconnecting after the bus restarts, and what happens without any bus.
#include "agent/systemd_bus/bus_connection.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <systemd/sd-bus.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sstream>

#include "agent/base/log.hpp"
#include "agent/systemd_bus/status_codec.hpp"
#include "agent/systemd_bus/status_service.hpp"
#include "test/systemd/bus_test_loop.hpp"
#include "test/systemd/private_bus.hpp"

namespace asio = boost::asio;
using nvdra::systemd_bus::BusConnection;
using nvdra::systemd_bus::BusEndpoint;
using nvdra::systemd_bus::Message;
using nvdra::systemd_bus::MethodCall;
using nvdra::test::run_until;
using nvdra::test::spawn_into;

namespace {

struct Running {
  asio::cancellation_signal stop;
  bool ended = false;
};

// Starts conn.run() with a cancellation signal the test controls.
void start(asio::io_context& io, BusConnection& conn, Running& r) {
  asio::co_spawn(io, conn.run(), asio::bind_cancellation_slot(r.stop.slot(), [&r](std::exception_ptr) { r.ended = true; }));
}

BusEndpoint at(const nvdra::test::PrivateBus& bus) { return {BusEndpoint::Kind::kAddress, bus.address()}; }

MethodCall get_id() {
  return {"org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", {},
          std::chrono::seconds(5)};
}

// Coroutines take their inputs as parameters (copied into the frame), never as lambda captures.
asio::awaitable<nvdra::Result<Message>> call_when_connected(BusConnection* conn, MethodCall call) {
  co_await conn->wait_connected();
  co_return co_await conn->call(std::move(call));
}

asio::awaitable<nvdra::Result<std::string>> version_when_connected(BusConnection* conn) {
  co_await conn->wait_connected();
  co_return co_await conn->get_string_property("io.nvdra.Agent1", "/io/nvdra/Agent1", "io.nvdra.Agent1", "Version");
}

}  // namespace

TEST(BusConnection, CallReturnsTheBusDaemonsReply) {
  nvdra::test::PrivateBus bus;
  asio::io_context io;
  BusConnection conn(io.get_executor(), at(bus));
  Running r;
  start(io, conn, r);
  std::optional<nvdra::Result<Message>> reply;
  spawn_into(io, call_when_connected(&conn, get_id()), reply);
  ASSERT_TRUE(run_until(io, [&] { return reply.has_value(); }));
  ASSERT_TRUE(reply->ok()) << reply->error().message;
  auto id = (*reply)->read_string();
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->size(), 32u);  // the bus id is 32 hex digits
  r.stop.emit(asio::cancellation_type::all);
  EXPECT_TRUE(run_until(io, [&] { return r.ended; }));
  EXPECT_FALSE(conn.connected());
}

TEST(BusConnection, CallToANameNobodyOwnsIsNotFoundAndNamesTheCall) {
  nvdra::test::PrivateBus bus;
  asio::io_context io;
  BusConnection conn(io.get_executor(), at(bus));
  Running r;
  start(io, conn, r);
  std::optional<nvdra::Result<Message>> reply;
  spawn_into(io,
             call_when_connected(&conn, {"io.nvdra.Nobody", "/x", "io.nvdra.Nobody", "Hello", {}, std::chrono::seconds(5)}),
             reply);
  ASSERT_TRUE(run_until(io, [&] { return reply.has_value(); }));
  ASSERT_FALSE(reply->ok());
  EXPECT_EQ(reply->error().code, nvdra::ErrorCode::kNotFound);
  EXPECT_NE(reply->error().message.find("io.nvdra.Nobody /x: io.nvdra.Nobody.Hello"), std::string::npos)
      << reply->error().message;
  r.stop.emit(asio::cancellation_type::all);
  EXPECT_TRUE(run_until(io, [&] { return r.ended; }));
}

TEST(BusConnection, CallWhileDisconnectedFailsAsUnavailable) {
  asio::io_context io;
  BusConnection conn(io.get_executor(), {BusEndpoint::Kind::kAddress, "unix:path=/nonexistent/nvdra-test"});
  std::optional<nvdra::Result<Message>> reply;
  spawn_into(io, conn.call(get_id()), reply);
  ASSERT_TRUE(run_until(io, [&] { return reply.has_value(); }));
  ASSERT_FALSE(reply->ok());
  EXPECT_EQ(reply->error().code, nvdra::ErrorCode::kUnavailable);
}

TEST(BusConnection, StringPropertyOfAnotherPeerIsRead) {
  nvdra::test::PrivateBus bus;
  asio::io_context io;
  nvdra::systemd_bus::StatusService service(io.get_executor(), at(bus));
  nvdra::systemd_bus::StatusSnapshot snap;
  snap.version = "9.8.7";
  service.update(snap);
  BusConnection client(io.get_executor(), at(bus));
  Running service_run, client_run;
  asio::co_spawn(io, service.run(), asio::bind_cancellation_slot(service_run.stop.slot(), [&](std::exception_ptr) {
                   service_run.ended = true;
                 }));
  start(io, client, client_run);
  ASSERT_TRUE(run_until(io, [&] { return service.owns_name(); }));
  std::optional<nvdra::Result<std::string>> version;
  spawn_into(io, client.get_string_property("io.nvdra.Agent1", "/io/nvdra/Agent1", "io.nvdra.Agent1", "Version"),
             version);
  ASSERT_TRUE(run_until(io, [&] { return version.has_value(); }));
  ASSERT_TRUE(version->ok()) << version->error().message;
  EXPECT_EQ(**version, "9.8.7");
  service_run.stop.emit(asio::cancellation_type::all);
  client_run.stop.emit(asio::cancellation_type::all);
  EXPECT_TRUE(run_until(io, [&] { return service_run.ended && client_run.ended; }));
}

TEST(BusConnection, MatchDeliversPropertiesChangedWithTheChangedNames) {
  nvdra::test::PrivateBus bus;
  asio::io_context io;
  nvdra::systemd_bus::StatusService service(io.get_executor(), at(bus));
  BusConnection client(io.get_executor(), at(bus));
  std::vector<std::string> changed, invalidated;
  std::string iface;
  auto match = client.add_match(
      "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/io/nvdra/Agent1'",
      [&](Message& m) {
        auto name = m.read_string();
        if (name) iface = *name;
        // a{sv} of values, then as of invalidated names: collect the names that carry values.
        if (!m.enter_array("{sv}")) return;
        while (!m.at_end()) {
          if (sd_bus_message_enter_container(m.get(), 'e', "sv") <= 0) return;
          if (auto key = m.read_string()) changed.push_back(*key);
          sd_bus_message_skip(m.get(), "v");
          (void)m.exit_container();
        }
        if (!m.exit_container()) return;
        if (auto names = m.read_strings()) invalidated.insert(invalidated.end(), names->begin(), names->end());
      });
  Running service_run, client_run;
  asio::co_spawn(io, service.run(), asio::bind_cancellation_slot(service_run.stop.slot(), [&](std::exception_ptr) {
                   service_run.ended = true;
                 }));
  start(io, client, client_run);
  ASSERT_TRUE(run_until(io, [&] { return service.owns_name() && client.connected(); }));
  // The match is installed asynchronously; a round trip through the daemon orders it before the signal.
  std::optional<nvdra::Result<Message>> ping;
  spawn_into(io, client.call(get_id()), ping);
  ASSERT_TRUE(run_until(io, [&] { return ping.has_value(); }));

  auto snap = service.snapshot();
  snap.devices.push_back({"gpu.nvidia.com", "gpu-0", "gpu", "GPU-1", "healthy"});
  snap.ready = true;
  service.update(snap);
  ASSERT_TRUE(run_until(io, [&] { return !changed.empty(); }));
  EXPECT_EQ(iface, "io.nvdra.Agent1");
  EXPECT_EQ(changed, (std::vector<std::string>{"Ready", "Devices"}));

  changed.clear();
  service.update(snap);  // nothing differs: no signal
  snap.imex.active_state = "failed";
  service.update(snap);
  ASSERT_TRUE(run_until(io, [&] { return !changed.empty(); }));
  EXPECT_EQ(changed, (std::vector<std::string>{"ImexActiveState"}));

  // The claims are named as invalidated, without their value.
  changed.clear();
  snap.claims.push_back(nvdra::systemd_bus::ClaimStatus{"uid-1", "ns", "a", "gpu.nvidia.com", "PrepareCompleted", {"gpu-0"}});
  service.update(snap);
  ASSERT_TRUE(run_until(io, [&] { return !invalidated.empty(); }));
  EXPECT_EQ(invalidated, (std::vector<std::string>{"PreparedClaims"}));
  EXPECT_TRUE(changed.empty());

  service_run.stop.emit(asio::cancellation_type::all);
  client_run.stop.emit(asio::cancellation_type::all);
  EXPECT_TRUE(run_until(io, [&] { return service_run.ended && client_run.ended; }));
}

TEST(BusConnection, ReconnectsAndServesAgainAfterTheBusRestarts) {
  nvdra::test::PrivateBus bus;
  asio::io_context io;
  nvdra::systemd_bus::StatusService service(io.get_executor(), at(bus));
  nvdra::systemd_bus::StatusSnapshot snap;
  snap.version = "1.2.3";
  service.update(snap);
  Running service_run;
  asio::co_spawn(io, service.run(), asio::bind_cancellation_slot(service_run.stop.slot(), [&](std::exception_ptr) {
                   service_run.ended = true;
                 }));
  ASSERT_TRUE(run_until(io, [&] { return service.owns_name(); }));
  const auto first = service.bus().generation();

  bus.restart();
  ASSERT_TRUE(run_until(io, [&] { return service.bus().generation() > first && service.owns_name(); }));

  BusConnection client(io.get_executor(), at(bus));
  Running client_run;
  start(io, client, client_run);
  std::optional<nvdra::Result<std::string>> version;
  spawn_into(io, version_when_connected(&client), version);
  ASSERT_TRUE(run_until(io, [&] { return version.has_value(); }));
  ASSERT_TRUE(version->ok()) << version->error().message;
  EXPECT_EQ(**version, "1.2.3");
  service_run.stop.emit(asio::cancellation_type::all);
  client_run.stop.emit(asio::cancellation_type::all);
  EXPECT_TRUE(run_until(io, [&] { return service_run.ended && client_run.ended; }));
}

TEST(BusConnection, PendingCallFailsWhenTheConnectionIsStopped) {
  nvdra::test::PrivateBus bus;
  asio::io_context io;
  BusConnection caller(io.get_executor(), at(bus));
  // A peer that is connected but never reads: a call to it stays unanswered.
  sd_bus* silent = nullptr;
  ASSERT_GE(sd_bus_new(&silent), 0);
  ASSERT_GE(sd_bus_set_address(silent, bus.address().c_str()), 0);
  ASSERT_GE(sd_bus_set_bus_client(silent, 1), 0);
  ASSERT_GE(sd_bus_start(silent), 0);
  const char* unique = nullptr;
  ASSERT_GE(sd_bus_get_unique_name(silent, &unique), 0);  // blocks for Hello; fine in a test
  const std::string silent_name = unique;

  Running r;
  start(io, caller, r);
  std::optional<nvdra::Result<Message>> reply;
  spawn_into(io, call_when_connected(&caller, {silent_name, "/", "org.freedesktop.DBus.Peer", "Ping", {},
                                              std::chrono::minutes(5)}),
             reply);
  ASSERT_TRUE(run_until(io, [&] { return caller.connected(); }));
  io.poll();
  r.stop.emit(asio::cancellation_type::all);
  ASSERT_TRUE(run_until(io, [&] { return reply.has_value() && r.ended; }));
  ASSERT_FALSE(reply->ok());
  EXPECT_EQ(reply->error().code, nvdra::ErrorCode::kUnavailable);
  EXPECT_NE(reply->error().message.find("connection closed"), std::string::npos) << reply->error().message;
  sd_bus_flush_close_unref(silent);
}

TEST(BusConnection, NoBusIsReportedOnceWhileRetrying) {
  std::ostringstream lines;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
  auto log = nvdra::logger("dbus");
  log->sinks().push_back(sink);
  asio::io_context io;
  BusConnection conn(io.get_executor(), {BusEndpoint::Kind::kAddress, "unix:path=/nonexistent/nvdra-test"});
  Running r;
  start(io, conn, r);
  ASSERT_TRUE(run_until(io, [&] { return conn.attempts() >= 4; }));
  r.stop.emit(asio::cancellation_type::all);
  EXPECT_TRUE(run_until(io, [&] { return r.ended; }));
  log->sinks().pop_back();
  const std::string text = lines.str();
  size_t warnings = 0;
  for (size_t at = text.find("cannot connect"); at != std::string::npos; at = text.find("cannot connect", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << text;
  EXPECT_NE(text.find("bus unix:path=/nonexistent/nvdra-test"), std::string::npos) << text;
}
