// The clients of one API server share their keep-alive connections: a second client's request, or a
// watch, goes over an idle one instead of a new handshake; clients of other TLS settings, servers or
// executors share nothing. A burst of one client keeps its connections for the next; a connection
// unused past the idle timeout closes.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>

#include "k8s/https_connection.hpp"
#include "k8s/https_transport.hpp"
#include "k8s/tls_context.hpp"
#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::k8s::testing {
namespace {

std::unique_ptr<HttpsTransport> transport(asio::io_context& io, const ClientConfig& cfg) {
  auto t = HttpsTransport::create(io.get_executor(), cfg);
  if (!t) throw std::runtime_error(t.error().describe());
  return std::move(*t);
}

TEST_F(DoubleTest, ASecondClientOfTheServerUsesTheFirstOnesIdleConnection) {
  auto cfg = double_->client_config();
  auto slices = transport(io_, cfg);
  auto claims = transport(io_, cfg);  // another client: its own limits, the same server
  run([&]() -> awaitable<void> {
    auto first = co_await slices->exchange(HttpMethod::kGet, "/version", {});
    CO_ASSERT_TRUE(first && first->status == 200);
    auto second = co_await claims->exchange(HttpMethod::kGet, "/version", {});
    CO_ASSERT_TRUE(second && second->status == 200);
    EXPECT_EQ(slices->connections_opened(), 1u);
    EXPECT_EQ(claims->connections_opened(), 0u) << "the idle connection of the other client was there";
  });
}

TEST_F(DoubleTest, AWatchTakesAnIdleConnectionAndHoldsIt) {
  auto api = transport(io_, double_->client_config());
  run([&]() -> awaitable<void> {
    auto first = co_await api->exchange(HttpMethod::kGet, "/version", {});
    CO_ASSERT_TRUE(first && first->status == 200);
    auto watch = co_await api->open_watch("/apis/resource.k8s.io/v1/resourceslices?watch=1", 1 << 20,
                                          std::chrono::seconds(30));
    CO_ASSERT_TRUE(static_cast<bool>(watch));
    EXPECT_EQ(api->connections_opened(), 1u) << "the watch went over the idle connection, no handshake";
    // The watch holds it: the next request needs a connection of its own.
    auto next = co_await api->exchange(HttpMethod::kGet, "/version", {});
    CO_ASSERT_TRUE(next && next->status == 200);
    EXPECT_EQ(api->connections_opened(), 2u);
  });
}

TEST_F(DoubleTest, AServerNamedByHostNameIsLookedUpAndAnAddressIsNot) {
  auto by_address = double_->client_config();  // https://127.0.0.1:<port>: no lookup
  auto by_name = by_address;
  by_name.host = "localhost";  // in the double's certificate too: looked up, then verified under that name
  auto a = transport(io_, by_address);
  auto n = transport(io_, by_name);
  run([&]() -> awaitable<void> {
    auto first = co_await a->exchange(HttpMethod::kGet, "/version", {});
    CO_ASSERT_TRUE(first && first->status == 200);
    auto second = co_await n->exchange(HttpMethod::kGet, "/version", {});
    CO_ASSERT_TRUE(second && second->status == 200);
    EXPECT_EQ(n->connections_opened(), 1u) << "another server name, another pool";
  });
}

// `burst` exchanges of one client at once, and back when all are answered.
awaitable<void> burst(HttpsTransport& api, int n) {
  int left = n;
  asio::steady_timer all_done(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
  for (int i = 0; i < n; ++i)
    asio::co_spawn(co_await asio::this_coro::executor,
                   [&]() -> awaitable<void> {
                     auto r = co_await api.exchange(HttpMethod::kGet, "/version", {});
                     EXPECT_TRUE(r && r->status == 200);
                     if (--left == 0) all_done.cancel();
                   },
                   asio::detached);
  co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
}

TEST_F(DoubleTest, ASecondBurstOfOneClientGoesOverTheFirstOnesConnections) {
  auto cfg = double_->client_config();
  auto claims = transport(io_, cfg);
  run([&]() -> awaitable<void> {
    co_await burst(*claims, 32);
    const auto first = claims->connections_opened();
    EXPECT_LE(first, static_cast<uint64_t>(cfg.max_connections));
    co_await burst(*claims, 32);
    // Every connection of the first burst was kept: 64 concurrent prepares' claim reads cost no
    // handshake once the first round opened them (with 4 kept, each round reopened ~13).
    EXPECT_EQ(claims->connections_opened(), first);
  });
}

TEST(SharedConnections, KeepsAtMostOneClientsConnectionsIdle) {
  asio::io_context io;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  SharedConnections shared;
  EXPECT_EQ(SharedConnections::kMaxIdle, static_cast<std::size_t>(ClientConfig{}.max_connections));
  for (int i = 0; i < 10; ++i) shared.give_back(std::make_unique<HttpsConnection>(io.get_executor(), ctx));
  EXPECT_EQ(shared.idle(), SharedConnections::kMaxIdle);
  auto conn = shared.take_idle();
  ASSERT_NE(conn, nullptr);
  EXPECT_TRUE(conn->reused);
  EXPECT_EQ(shared.idle(), SharedConnections::kMaxIdle - 1);
  shared.drop_idle();
  EXPECT_EQ(shared.take_idle(), nullptr);
}

TEST(SharedConnections, AConnectionKeptUnusedPastTheIdleTimeoutIsClosedAtTheNextUse) {
  asio::io_context io;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  SharedConnections shared;
  const auto t0 = SharedConnections::Clock::now();
  auto older = std::make_unique<HttpsConnection>(io.get_executor(), ctx);
  auto newer = std::make_unique<HttpsConnection>(io.get_executor(), ctx);
  auto* newer_at = newer.get();
  shared.give_back(std::move(older), t0);
  shared.give_back(std::move(newer), t0 + std::chrono::seconds(60));
  // 100 s on: the first is past 90 s and closes; the second is still kept.
  auto got = shared.take_idle(t0 + std::chrono::seconds(100));
  EXPECT_EQ(got.get(), newer_at);
  EXPECT_EQ(shared.idle(), 0u);
  // Given back and left alone past the timeout: gone at the next use, here a give_back.
  shared.give_back(std::move(got), t0 + std::chrono::seconds(100));
  shared.give_back(std::make_unique<HttpsConnection>(io.get_executor(), ctx), t0 + std::chrono::seconds(191));
  EXPECT_EQ(shared.idle(), 1u);
  EXPECT_NE(shared.take_idle(t0 + std::chrono::seconds(191)).get(), newer_at);
}

TEST(SharedConnections, OneServerOneExecutorOneTlsSettingShareAndNothingElse) {
  asio::io_context io, other_io;
  ClientConfig insecure;
  insecure.insecure_skip_tls_verify = true;
  ClientConfig verifying;  // the system's CAs: another TLS context
  auto ctx = tls_context_for(insecure);
  auto ctx2 = tls_context_for(verifying);
  ASSERT_TRUE(ctx && ctx2);
  auto a = SharedConnections::for_server(io.get_executor(), *ctx, "10.0.0.1", "6443");
  EXPECT_EQ(a, SharedConnections::for_server(io.get_executor(), *ctx, "10.0.0.1", "6443"));
  EXPECT_NE(a, SharedConnections::for_server(io.get_executor(), *ctx, "10.0.0.2", "6443"));
  EXPECT_NE(a, SharedConnections::for_server(io.get_executor(), *ctx, "10.0.0.1", "443"));
  EXPECT_NE(a, SharedConnections::for_server(io.get_executor(), *ctx2, "10.0.0.1", "6443"));
  EXPECT_NE(a, SharedConnections::for_server(other_io.get_executor(), *ctx, "10.0.0.1", "6443"));
}

}  // namespace
}  // namespace nvdra::k8s::testing
