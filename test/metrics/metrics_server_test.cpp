// MetricsServer over real TCP on 127.0.0.1 (a free port): the page, 404/405/413, HEAD, keep-alive,
// the read timeout, the connection limit, and shutdown closing open connections. The client is Beast on the same loop.
#include "agent/metrics/metrics_server.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>
#include <utility>

#include "test/support/run_awaitable.hpp"

namespace nvdra::metrics {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Response = http::response<http::string_body>;

const std::string kPage = "# HELP x An x.\n# TYPE x counter\nx 1\n";

class MetricsServerTest : public ::testing::Test {
 protected:
  void start(MetricsServerLimits limits = {}) {
    MetricsPage page{[] { return kPage; }, [this] { ++started_; }, [this](int status) { finished_.push_back(status); }};
    server_.emplace(io_.get_executor(), "127.0.0.1:0", "/metrics", std::move(page), limits);
    asio::co_spawn(io_, server_->run(), asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr e) {
                     run_ended_ = true;
                     run_error_ = e;
                   }));
  }
  unsigned short port() const { return server_->local_endpoint().port(); }

  asio::awaitable<tcp::socket> connect() {
    tcp::socket s(io_);
    co_await s.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port()), asio::use_awaitable);
    co_return s;
  }
  static asio::awaitable<Response> exchange(tcp::socket& s, http::request<http::string_body> req) {
    req.prepare_payload();
    co_await http::async_write(s, req, asio::use_awaitable);
    boost::beast::flat_buffer buffer;
    Response res;
    if (req.method() == http::verb::head) {
      http::response_parser<http::string_body> parser;
      parser.skip(true);
      co_await http::async_read(s, buffer, parser, asio::use_awaitable);
      co_return parser.release();
    }
    co_await http::async_read(s, buffer, res, asio::use_awaitable);
    co_return res;
  }
  Response fetch(http::verb verb, const std::string& target, std::string body = {}) {
    return testing::run_awaitable(io_, [&]() -> asio::awaitable<Response> {
      auto s = co_await connect();
      http::request<http::string_body> req{verb, target, 11};
      req.body() = body;
      co_return co_await exchange(s, std::move(req));
    }());
  }

  asio::io_context io_;
  std::optional<MetricsServer> server_;
  asio::cancellation_signal stop_;
  bool run_ended_ = false;
  std::exception_ptr run_error_;
  int started_ = 0;
  std::vector<int> finished_;
};

TEST_F(MetricsServerTest, ServesThePageOnItsPath) {
  start();
  const auto res = fetch(http::verb::get, "/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(res.body(), kPage);
  EXPECT_EQ(started_, 1);
  EXPECT_EQ(finished_, std::vector<int>{200});
  // A query string does not change the path.
  EXPECT_EQ(fetch(http::verb::get, "/metrics?x=1").result(), http::status::ok);
}

TEST_F(MetricsServerTest, OtherPathsAre404AndOtherMethods405) {
  start();
  const auto missing = fetch(http::verb::get, "/");
  EXPECT_EQ(missing.result(), http::status::not_found);
  EXPECT_EQ(missing.body(), "404 page not found\n");
  EXPECT_EQ(fetch(http::verb::get, "/metrics/x").result(), http::status::not_found);
  const auto post = fetch(http::verb::post, "/metrics", "x");
  EXPECT_EQ(post.result(), http::status::method_not_allowed);
  EXPECT_EQ(post[http::field::allow], "GET, HEAD");
  EXPECT_EQ(started_, 0);  // none of them rendered the page
}

TEST_F(MetricsServerTest, HeadAnswersTheLengthWithoutTheBody) {
  start();
  const auto res = fetch(http::verb::head, "/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_length], std::to_string(kPage.size()));
  EXPECT_EQ(res.body(), "");
}

TEST_F(MetricsServerTest, AnOversizedBodyIs413AndClosed) {
  start(MetricsServerLimits{.body_bytes = 16});
  const auto res = fetch(http::verb::post, "/metrics", std::string(17, 'x'));
  EXPECT_EQ(res.result(), http::status::payload_too_large);
  EXPECT_FALSE(res.keep_alive());
}

TEST_F(MetricsServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  start();
  const int ok = testing::run_awaitable(io_, [&]() -> asio::awaitable<int> {
    auto s = co_await connect();
    int n = 0;
    for (int i = 0; i < 3; ++i)
      n += (co_await exchange(s, http::request<http::string_body>{http::verb::get, "/metrics", 11})).result() ==
           http::status::ok;
    co_return n;
  }());
  EXPECT_EQ(ok, 3);
}

// Reads until the server closes the connection; returns the error that ended the read.
asio::awaitable<boost::system::error_code> wait_closed(tcp::socket& s) {
  char byte;
  auto [ec, n] = co_await asio::async_read(s, asio::buffer(&byte, 1), asio::as_tuple(asio::use_awaitable));
  (void)n;
  co_return ec;
}

TEST_F(MetricsServerTest, AnIdleConnectionIsClosedAfterTheReadTimeout) {
  start(MetricsServerLimits{.read_timeout = std::chrono::milliseconds(50)});
  const auto ec = testing::run_awaitable(io_, [&]() -> asio::awaitable<boost::system::error_code> {
    auto s = co_await connect();
    co_return co_await wait_closed(s);
  }());
  EXPECT_EQ(ec, asio::error::eof);
}

TEST_F(MetricsServerTest, AConnectionPastTheLimitIsClosedAtOnceWhileTheOpenOneIsServed) {
  start(MetricsServerLimits{.connections = 1});
  using Outcome = std::pair<boost::system::error_code, http::status>;
  const auto [refused, status] = testing::run_awaitable(io_, [&]() -> asio::awaitable<Outcome> {
    auto first = co_await connect();
    // One answered request: the first connection is open (and counted) before the second comes.
    co_await exchange(first, http::request<http::string_body>{http::verb::get, "/metrics", 11});
    auto second = co_await connect();
    // A request on it: served, its answer would be read (no error); refused, the read finds it closed.
    http::request<http::string_body> req{http::verb::get, "/metrics", 11};
    co_await http::async_write(second, req, asio::as_tuple(asio::use_awaitable));
    const auto ec = co_await wait_closed(second);
    auto again = co_await exchange(first, http::request<http::string_body>{http::verb::get, "/metrics", 11});
    co_return Outcome{ec, again.result()};
  }());
  EXPECT_TRUE(refused == asio::error::eof || refused == asio::error::connection_reset) << refused.message();
  EXPECT_EQ(status, http::status::ok);
}

TEST_F(MetricsServerTest, StoppingClosesTheListenerAndOpenConnections) {
  start();
  const auto listening = port();
  const auto ec = testing::run_awaitable(io_, [&]() -> asio::awaitable<boost::system::error_code> {
    auto s = co_await connect();
    // One answered request proves the connection is being served, then stop while it idles.
    co_await exchange(s, http::request<http::string_body>{http::verb::get, "/metrics", 11});
    stop_.emit(asio::cancellation_type::terminal);
    co_return co_await wait_closed(s);
  }());
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  io_.restart();
  io_.run();  // what is left: the server's coroutines ending
  EXPECT_TRUE(run_ended_);
  ASSERT_TRUE(run_error_);
  EXPECT_THROW(std::rethrow_exception(run_error_), boost::system::system_error);
  tcp::socket late(io_);
  boost::system::error_code connect_error;
  late.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), listening), connect_error);
  EXPECT_EQ(connect_error, asio::error::connection_refused);
}

TEST(ListenEndpoint, ParsesHostAndPortAsGoDoes) {
  EXPECT_EQ(parse_listen_endpoint(":8080"), tcp::endpoint(tcp::v6(), 8080));
  EXPECT_EQ(parse_listen_endpoint("127.0.0.1:0"), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  EXPECT_EQ(parse_listen_endpoint("[::1]:9"), tcp::endpoint(asio::ip::make_address("::1"), 9));
  EXPECT_EQ(parse_listen_endpoint("localhost:9").port(), 9);
  for (const char* bad : {"8080", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x", "no-such-host.invalid:80"})
    EXPECT_THROW(parse_listen_endpoint(bad), std::runtime_error) << bad;
}

TEST(ListenEndpoint, ATakenPortFailsConstructionNamingTheEndpoint) {
  asio::io_context io;
  MetricsServer first(io.get_executor(), "127.0.0.1:0", "/metrics", MetricsPage{[] { return std::string(); }});
  const std::string taken = "127.0.0.1:" + std::to_string(first.local_endpoint().port());
  try {
    MetricsServer second(io.get_executor(), taken, "/metrics", MetricsPage{[] { return std::string(); }});
    FAIL() << "bound twice";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--http-endpoint=" + taken + ": cannot listen"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdra::metrics
