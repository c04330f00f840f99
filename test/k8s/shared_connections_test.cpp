// The clients of one API server share their keep-alive connections: a second client's request, or a
// watch, goes over an idle one instead of a new handshake; clients of other TLS settings, servers or
// executors share nothing.

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

TEST(SharedConnections, KeepsAtMostFourIdle) {
  asio::io_context io;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  SharedConnections shared;
  for (int i = 0; i < 6; ++i) shared.give_back(std::make_unique<HttpsConnection>(io.get_executor(), ctx));
  EXPECT_EQ(shared.idle(), SharedConnections::kMaxIdle);
  auto conn = shared.take_idle();
  ASSERT_NE(conn, nullptr);
  EXPECT_TRUE(conn->reused);
  EXPECT_EQ(shared.idle(), SharedConnections::kMaxIdle - 1);
  shared.drop_idle();
  EXPECT_EQ(shared.take_idle(), nullptr);
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
