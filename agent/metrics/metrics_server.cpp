#include "agent/metrics/metrics_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <stdexcept>

#include "agent/base/log.hpp"
#include "agent/metrics/tcp_listener.hpp"

namespace nvdra::metrics {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

std::runtime_error endpoint_error(const std::string& endpoint, const std::string& why) {
  return std::runtime_error("--http-endpoint=" + endpoint + ": " + why);
}

}  // namespace

tcp::endpoint parse_listen_endpoint(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) throw endpoint_error(endpoint, "must be [host]:port");
  std::string host = endpoint.substr(0, colon);
  const std::string port = endpoint.substr(colon + 1);
  unsigned long number = 0;
  try {
    std::size_t used = 0;
    number = std::stoul(port, &used);
    if (used != port.size() || number > 65535) throw std::out_of_range(port);
  } catch (const std::exception&) {
    throw endpoint_error(endpoint, "the port must be a number from 0 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto p = static_cast<unsigned short>(number);
  // Empty host: every interface, IPv6 and IPv4 (as Go's ":8080"); the constructor falls back to
  // IPv4 alone where the kernel has no IPv6.
  if (host.empty()) return tcp::endpoint(tcp::v6(), p);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, p);
  // A host name: resolved once at start-up, before the io_context runs (getaddrinfo blocks).
  asio::io_context io;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, port, ec);
  if (ec || results.empty()) throw endpoint_error(endpoint, "cannot resolve " + host + ": " + ec.message());
  return results.begin()->endpoint();
}

struct MetricsServer::State {
  State(asio::any_io_executor ex, std::string path_, MetricsPage page_, MetricsServerLimits limits_)
      : acceptor(ex), path(std::move(path_)), page(std::move(page_)), limits(limits_), log(nvdra::logger("metrics")) {}
  tcp::acceptor acceptor;
  std::string path;
  MetricsPage page;
  MetricsServerLimits limits;
  std::shared_ptr<spdlog::logger> log;
  OpenConnections open;  // live connections, closed at shutdown
};

namespace {

http::response<http::string_body> answer(MetricsServer::State& s, const http::request<http::string_body>& req) {
  std::string_view target = req.target();
  target = target.substr(0, target.find('?'));
  http::response<http::string_body> res;
  res.version(req.version());
  res.keep_alive(req.keep_alive());
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  if (target != s.path) {
    res.result(http::status::not_found);
    res.body() = "404 page not found\n";
  } else if (req.method() != http::verb::get && req.method() != http::verb::head) {
    res.result(http::status::method_not_allowed);
    res.set(http::field::allow, "GET, HEAD");
    res.body() = "method not allowed\n";
  } else {
    s.page.started();
    std::string page;
    try {
      page = s.page.render();
      res.result(http::status::ok);
    } catch (const std::exception& e) {
      s.log->warn("metrics page failed: {}", e.what());
      res.result(http::status::internal_server_error);
      page = "error rendering the metrics page\n";
    }
    s.page.finished(static_cast<int>(res.result_int()));
    if (res.result() == http::status::ok) res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    if (req.method() == http::verb::head) {
      res.content_length(page.size());
      return res;
    }
    res.body() = std::move(page);
  }
  res.prepare_payload();
  return res;
}

asio::awaitable<void> serve_connection(std::shared_ptr<MetricsServer::State> s, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  const auto registered = s->open.streams.insert(s->open.streams.end(), &stream);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(s->limits.header_bytes));
    parser.body_limit(s->limits.body_bytes);
    stream.expires_after(s->limits.read_timeout);
    auto [read_error, read_bytes] = co_await http::async_read(stream, buffer, parser, kNoThrow);
    (void)read_bytes;
    if (read_error == http::error::body_limit || read_error == http::error::header_limit) {
      http::response<http::string_body> res{read_error == http::error::body_limit ? http::status::payload_too_large
                                                                                   : http::status::request_header_fields_too_large,
                                            11};
      res.keep_alive(false);
      res.prepare_payload();
      stream.expires_after(s->limits.write_timeout);
      co_await http::async_write(stream, res, kNoThrow);
      break;
    }
    if (read_error) break;  // closed by the peer, timed out, cancelled at shutdown, malformed
    auto res = answer(*s, parser.get());
    const bool keep = res.keep_alive();
    stream.expires_after(s->limits.write_timeout);
    auto [write_error, written] = co_await http::async_write(stream, res, kNoThrow);
    (void)written;
    if (write_error || !keep || s->open.stopping) break;
  }
  s->open.streams.erase(registered);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

MetricsServer::MetricsServer(asio::any_io_executor ex, const std::string& endpoint, std::string path,
                             MetricsPage page, MetricsServerLimits limits)
    : state_(std::make_shared<State>(ex, std::move(path), std::move(page), limits)) {
  if (auto ec = listen_at(state_->acceptor, parse_listen_endpoint(endpoint)))
    throw endpoint_error(endpoint, "cannot listen: " + ec.message());
}

MetricsServer::~MetricsServer() {
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
}

tcp::endpoint MetricsServer::local_endpoint() const { return state_->acceptor.local_endpoint(); }

asio::awaitable<void> MetricsServer::run() {
  auto s = state_;  // held while the loop runs: it uses s's acceptor and connections
  const auto ex = co_await asio::this_coro::executor;
  co_await accept_connections(
      s->acceptor, s->open, s->limits.connections,
      [&s] { s->log->warn("metrics connections={} at the limit: closing a new one", s->open.streams.size()); },
      [&s, ex](tcp::socket socket) { asio::co_spawn(ex, serve_connection(s, std::move(socket)), asio::detached); });
}

}  // namespace nvdra::metrics
