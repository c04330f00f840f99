#include "agent/admission/webhook_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <stdexcept>

#include "agent/admission/admission_review.hpp"
#include "agent/admission/tls_files.hpp"
#include "agent/admission/webhook_metrics.hpp"
#include "agent/base/log.hpp"
#include "agent/metrics/metrics_server.hpp"
#include "agent/metrics/tcp_listener.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::admission {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Response = http::response<http::string_body>;

struct WebhookServer::State {
  State(asio::any_io_executor ex, WebhookServerOptions o, TlsFiles& t, WebhookMetrics& m)
      : acceptor(ex), options(std::move(o)), tls(t), metrics(m), log(nvdra::logger("webhook")) {}
  tcp::acceptor acceptor;
  WebhookServerOptions options;
  TlsFiles& tls;
  WebhookMetrics& metrics;
  std::shared_ptr<spdlog::logger> log;
  metrics::OpenConnections open;  // live connections, closed at shutdown
  std::size_t reloads_seen = 0, failures_seen = 0;
  // The certificate files are stat'ed (and read when they changed) off the io_context, one check at
  // a time: TlsFiles is used from this one thread only.
  runtime::WorkerPool tls_files{1};
};

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view kReviewPath = "/validate-resource-claim-parameters";

Response text(const http::request<http::string_body>& req, http::status status, std::string body) {
  Response res{status, req.version()};
  res.keep_alive(req.keep_alive());
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

bool is_json(std::string_view content_type) {
  const auto media = content_type.substr(0, content_type.find(';'));
  return media == "application/json";
}

Response admit(WebhookServer::State& s, const http::request<http::string_body>& req) {
  if (req.method() != http::verb::post) return text(req, http::status::method_not_allowed, "method not allowed\n");
  const auto type = req[http::field::content_type];
  if (!is_json(type))
    return text(req, http::status::unsupported_media_type,
                "contentType=" + std::string(type) + ", expected application/json\n");
  const auto started = std::chrono::steady_clock::now();
  auto reply = review(req.body(), s.options.gates);
  Response res;
  if (reply.verdict == Verdict::kBadRequest) {
    s.log->warn("refused a request: {}", reply.body);
    res = text(req, http::status::bad_request, std::move(reply.body) + "\n");
  } else {
    res = Response{http::status::ok, req.version()};
    res.keep_alive(req.keep_alive());
    res.set(http::field::content_type, "application/json");
    res.body() = std::move(reply.body);
    res.prepare_payload();
  }
  const char* verdict = reply.verdict == Verdict::kAllowed  ? "allowed"
                        : reply.verdict == Verdict::kDenied ? "denied"
                                                            : "bad_request";
  s.metrics.review(verdict, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return res;
}

Response answer(WebhookServer::State& s, const http::request<http::string_body>& req) {
  std::string_view target = req.target();
  target = target.substr(0, target.find('?'));
  if (target == kReviewPath) return admit(s, req);
  if (target == "/readyz") return text(req, http::status::ok, "ok");
  return text(req, http::status::not_found, "404 page not found\n");
}

// One refusal written in the clear or over TLS, then the connection ends.
template <class Stream>
asio::awaitable<void> refuse(Stream& stream, WebhookServer::State& s, http::status status, std::string body,
                             std::string_view reason) {
  s.metrics.refused(reason);
  Response res{status, 11};
  res.keep_alive(false);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  res.prepare_payload();
  beast::get_lowest_layer(stream).expires_after(s.options.io_timeout);
  co_await http::async_write(stream, res, kNoThrow);
}

asio::awaitable<void> serve_requests(std::shared_ptr<WebhookServer::State> s,
                                     beast::ssl_stream<beast::tcp_stream&>& stream, beast::flat_buffer& buffer) {
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(kMaxReviewBytes);
    beast::get_lowest_layer(stream).expires_after(s->options.io_timeout);
    auto [read_error, read_bytes] = co_await http::async_read(stream, buffer, parser, kNoThrow);
    (void)read_bytes;
    if (read_error == http::error::body_limit)
      co_return co_await refuse(stream, *s, http::status::payload_too_large,
                                "request body is over the " + std::to_string(kMaxReviewBytes) + "-byte limit\n",
                                "too_large");
    if (read_error == http::error::header_limit)
      co_return co_await refuse(stream, *s, http::status::request_header_fields_too_large, "request head too large\n",
                                "too_large");
    if (read_error == http::error::end_of_stream || read_error == asio::ssl::error::stream_truncated ||
        read_error == asio::error::eof || read_error == beast::error::timeout || s->open.stopping)
      co_return;  // the peer closed or went idle, or shutdown
    if (read_error && read_error.category() == http::make_error_code(http::error::bad_method).category())
      co_return co_await refuse(stream, *s, http::status::bad_request, "malformed HTTP request: " + read_error.message() + "\n",
                                "malformed");
    if (read_error) co_return;  // a TLS or socket error: nothing more can be said on this stream
    auto res = answer(*s, parser.get());
    const bool keep = res.keep_alive();
    beast::get_lowest_layer(stream).expires_after(s->options.io_timeout);
    auto [write_error, written] = co_await http::async_write(stream, res, kNoThrow);
    (void)written;
    if (write_error || !keep || s->open.stopping) co_return;
  }
}

void note_reloads(WebhookServer::State& s) {
  for (; s.reloads_seen < s.tls.reloads(); ++s.reloads_seen) s.metrics.certificate_reload(true);
  for (; s.failures_seen < s.tls.reload_failures(); ++s.failures_seen) s.metrics.certificate_reload(false);
}

asio::awaitable<void> serve_connection(std::shared_ptr<WebhookServer::State> s, tcp::socket socket) {
  beast::tcp_stream tcp_stream(std::move(socket));
  const auto registered = s->open.streams.insert(s->open.streams.end(), &tcp_stream);
  beast::flat_buffer buffer;
  tcp_stream.expires_after(s->options.io_timeout);
  auto [detect_error, is_tls] = co_await beast::async_detect_ssl(tcp_stream, buffer, kNoThrow);
  if (!detect_error && !is_tls) {
    co_await refuse(tcp_stream, *s, http::status::bad_request, "Client sent an HTTP request to an HTTPS server.\n",
                    "not_tls");
  } else if (!detect_error) {
    // Held for the connection's life.
    const auto context = co_await s->tls_files.run([&tls = s->tls] { return tls.current(); });
    note_reloads(*s);
    beast::ssl_stream<beast::tcp_stream&> stream(tcp_stream, *context);
    auto [handshake_error, used] =
        co_await stream.async_handshake(asio::ssl::stream_base::server, buffer.data(), kNoThrow);
    buffer.consume(used);
    if (handshake_error) {
      s->metrics.refused("handshake");
      s->log->debug("TLS handshake failed: {}", handshake_error.message());
    } else {
      co_await serve_requests(s, stream, buffer);
      tcp_stream.expires_after(s->options.io_timeout);
      co_await stream.async_shutdown(kNoThrow);
    }
  }
  s->open.streams.erase(registered);
  beast::error_code ignored;
  tcp_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

WebhookServer::WebhookServer(asio::any_io_executor ex, WebhookServerOptions options, TlsFiles& tls,
                             WebhookMetrics& metrics)
    : state_(std::make_shared<State>(ex, std::move(options), tls, metrics)) {
  if (auto ec = metrics::listen_at(state_->acceptor, metrics::parse_listen_endpoint(state_->options.listen)))
    throw std::runtime_error("webhook: cannot listen on " + state_->options.listen + ": " + ec.message());
}

WebhookServer::~WebhookServer() {
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
}

tcp::endpoint WebhookServer::local_endpoint() const { return state_->acceptor.local_endpoint(); }

asio::awaitable<void> WebhookServer::run() {
  auto s = state_;  // held while the loop runs: it uses s's acceptor and connections
  const auto ex = co_await asio::this_coro::executor;
  // Past the limit a connection is closed at once; the API server retries on another replica.
  co_await metrics::accept_connections(
      s->acceptor, s->open, s->options.connections, [&s] { s->metrics.refused("connections"); },
      [&s, ex](tcp::socket socket) { asio::co_spawn(ex, serve_connection(s, std::move(socket)), asio::detached); });
}

}  // namespace nvdra::admission
