#include "k8s/https_transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <charconv>
#include <deque>
#include <fstream>
#include <sstream>

#include "agent/base/log.hpp"
#include "k8s/cancellation.hpp"
#include "k8s/https_connection.hpp"
#include "k8s/tls_context.hpp"
#include "k8s/watch_decoder.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::awaitable;
using asio::use_awaitable;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(use_awaitable);
constexpr int kMax429Retries = 5;  // as client-go: then the caller sees the 429
constexpr std::uint64_t kMaxBody = std::uint64_t{256} << 20;

struct HttpsTransport::Tls {
  std::shared_ptr<ssl::context> ctx;  // shared with the other clients of the same TLS settings
};

const std::string& TokenSource::current(bool force_reload) {
  if (file_.empty()) return token_;
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(file_, ec);
  if (!ec && (force_reload || mtime != mtime_ || token_.empty())) {
    std::ifstream in(file_);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string t = ss.str();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    token_ = std::move(t);
    mtime_ = mtime;
  }
  return token_;
}

namespace {

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

bool is_numeric_endpoint(const std::string& host, const std::string& port) {
  return is_ip_literal(host) && !port.empty() &&
         std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

http::verb to_verb(HttpMethod m) {
  switch (m) {
    case HttpMethod::kGet: return http::verb::get;
    case HttpMethod::kPost: return http::verb::post;
    case HttpMethod::kPut: return http::verb::put;
    case HttpMethod::kPatch: return http::verb::patch;
    case HttpMethod::kDelete: return http::verb::delete_;
  }
  return http::verb::get;
}

std::chrono::milliseconds parse_retry_after(const http::fields& fields) {
  const auto it = fields.find(http::field::retry_after);
  if (it == fields.end()) return {};
  long secs = 0;
  const auto v = it->value();
  if (std::from_chars(v.data(), v.data() + v.size(), secs).ec != std::errc() || secs < 0) return {};
  return std::chrono::seconds(std::min(secs, 600L));
}

ApiError io_error(const char* step, const boost::system::error_code& ec) {
  return make_local_error(kReasonConnection, std::string(step) + ": " + ec.message());
}


// The body of a 200 watch response, read piece by piece and decoded as it arrives.
class HttpsWatchStream final : public WatchStream {
 public:
  HttpsWatchStream(std::unique_ptr<HttpsTransport::Conn> conn, std::unique_ptr<http::response_parser<http::buffer_body>> p,
                   std::size_t max_event_bytes)
      : conn_(std::move(conn)), parser_(std::move(p)), decoder_(max_event_bytes) {}

  awaitable<ApiResult<std::optional<WatchEvent>>> next() override {
    while (frames_.empty()) {
      if (dead_) co_return make_local_error(kReasonStreamEnded, "watch stream already ended");
      if (parser_->is_done()) {
        dead_ = true;
        if (decoder_.pending_bytes() > 0) {
          co_return make_local_error(kReasonStreamEnded, "watch stream ended inside an event");
        }
        co_return std::optional<WatchEvent>();
      }
      parser_->get().body().data = chunk_;
      parser_->get().body().size = sizeof chunk_;
      // read_some, not read: read waits until the whole buffer is full, and events are small.
      auto [ec, n] = co_await http::async_read_some(conn_->stream, conn_->buffer, *parser_, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      co_await throw_if_cancelled();
      const std::size_t got = sizeof chunk_ - parser_->get().body().size;
      std::vector<DecodedFrame> out;
      decoder_.feed(std::string_view(chunk_, got), out);
      for (auto& f : out) frames_.push_back(std::move(f));
      if (ec && frames_.empty()) {
        dead_ = true;
        co_return make_local_error(kReasonStreamEnded, "watch connection lost: " + ec.message());
      }
      if (ec) dead_ = true;  // hand out what arrived first
    }
    auto frame = std::move(frames_.front());
    frames_.pop_front();
    if (auto* err = std::get_if<ApiError>(&frame)) co_return std::move(*err);
    co_return std::optional<WatchEvent>(std::move(std::get<WatchEvent>(frame)));
  }

 private:
  std::unique_ptr<HttpsTransport::Conn> conn_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  WatchDecoder decoder_;
  std::deque<DecodedFrame> frames_;
  bool dead_ = false;
  // One TLS record's plaintext at most (16 KiB): a read never returns more. Held by every watch for
  // as long as it runs.
  char chunk_[16 * 1024];
};

}  // namespace

HttpsTransport::HttpsTransport(asio::any_io_executor ex, ClientConfig config)
    : ex_(std::move(ex)),
      config_(std::move(config)),
      tls_(std::make_unique<Tls>()),
      limiter_(config_.qps, config_.burst),
      token_(config_.token, config_.token_file) {}

HttpsTransport::~HttpsTransport() = default;

Result<std::unique_ptr<HttpsTransport>> HttpsTransport::create(asio::any_io_executor ex, ClientConfig config) {
  if (config.user_agent.empty()) config.user_agent = default_user_agent();
  std::unique_ptr<HttpsTransport> t(new HttpsTransport(std::move(ex), std::move(config)));
  auto ctx = tls_context_for(t->config_);
  if (!ctx) return ctx.error();
  t->tls_->ctx = std::move(*ctx);
  t->shared_ = SharedConnections::for_server(t->ex_, t->tls_->ctx, t->config_.host, t->config_.port);
  return t;
}

awaitable<void> HttpsTransport::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(ex_, d);
  co_await timer.async_wait(use_awaitable);
}

awaitable<void> HttpsTransport::wait_for_limiter(http::verb verb, std::string_view target) {
  const auto delay = limiter_.reserve(RateLimiter::Clock::now());
  if (delay <= RateLimiter::Clock::duration::zero()) co_return;
  asio::steady_timer timer(ex_, delay);
  co_await timer.async_wait(use_awaitable);
  // As client-go says it ("Waited for … due to client-side throttling"): at debug always, at info
  // past client-go's extraLongThrottleLatency (1 s), naming the options that set the limit.
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(delay).count();
  nvdra::logger("k8s")->log(ms > 1000 ? spdlog::level::info : spdlog::level::debug,
                            "waited {} ms due to client-side throttling ({}: qps {}, burst {}), request: {} {}", ms,
                            config_.limit_options, config_.qps, config_.burst, std::string_view(http::to_string(verb)),
                            target);
}

awaitable<ApiResult<std::unique_ptr<HttpsTransport::Conn>>> HttpsTransport::connect() {
  tcp::resolver resolver(ex_);
  tcp::resolver::results_type endpoints;
  boost::system::error_code rec;
  if (is_numeric_endpoint(config_.host, config_.port)) {
    // An address and a port (in a pod: KUBERNETES_SERVICE_HOST/PORT): nothing to look up, so no
    // trip through the resolver's thread (half a millisecond of every new connection).
    endpoints = resolver.resolve(config_.host, config_.port,
                                 tcp::resolver::numeric_host | tcp::resolver::numeric_service, rec);
  } else {
    std::tie(rec, endpoints) = co_await resolver.async_resolve(config_.host, config_.port, kTuple);
    co_await throw_if_cancelled();
  }
  if (rec) co_return io_error("resolve", rec);
  auto conn = std::make_unique<Conn>(ex_, *tls_->ctx);
  if (!is_ip_literal(config_.host)) SSL_set_tlsext_host_name(conn->stream.native_handle(), config_.host.c_str());
  if (!config_.insecure_skip_tls_verify) conn->stream.set_verify_callback(ssl::host_name_verification(config_.host));
  auto& tcp_layer = beast::get_lowest_layer(conn->stream);
  tcp_layer.expires_after(config_.request_timeout);
  auto [cec, ep] = co_await tcp_layer.async_connect(endpoints, kTuple);
  co_await throw_if_cancelled();
  if (cec) co_return io_error("connect", cec);
  // Small request/response exchanges: without NODELAY, Nagle and the peer's delayed ACK can add
  // 40 ms to a request whose headers and body leave in two writes.
  boost::system::error_code nodelay_ec;
  tcp_layer.socket().set_option(tcp::no_delay(true), nodelay_ec);
  auto [hec] = co_await conn->stream.async_handshake(ssl::stream_base::client, kTuple);
  co_await throw_if_cancelled();
  if (hec) co_return io_error("TLS handshake", hec);
  ++connections_opened_;
  co_return conn;
}

awaitable<void> HttpsTransport::acquire_slot() {
  while (busy_ >= std::max(1, config_.max_connections)) {
    auto timer = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
    waiters_.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(use_awaitable, ec));
    std::erase(waiters_, timer);
    // A waiter cancelled just after release_slot() woke it must pass the wake-up on, or a free slot
    // would sit unused while others sleep.
    auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) wake_if_free();
    co_await throw_if_cancelled();
  }
  ++busy_;
}

void HttpsTransport::wake_if_free() {
  if (busy_ < std::max(1, config_.max_connections) && !waiters_.empty()) {
    auto next = waiters_.front();
    waiters_.pop_front();
    next->cancel();
  }
}

void HttpsTransport::release_slot() {
  --busy_;
  wake_if_free();
}

awaitable<ApiResult<HttpResponse>> HttpsTransport::exchange(HttpMethod method, std::string target, std::string body) {
  // At most max_connections exchanges at once: a burst of callers queues here instead of opening
  // a TLS connection each (the server sees a few keep-alive connections, not dozens of handshakes).
  co_await acquire_slot();
  struct Release {
    HttpsTransport* t;
    ~Release() { t->release_slot(); }
  } release{this};
  co_return co_await exchange_in_slot(method, std::move(target), std::move(body));
}

awaitable<ApiResult<HttpResponse>> HttpsTransport::exchange_in_slot(HttpMethod method, std::string target,
                                                                   std::string body) {
  bool auth_retried = false;
  int throttled = 0;
  for (int attempt = 0;; ++attempt) {
    co_await wait_for_limiter(to_verb(method), target);
    auto got = co_await idle_or_new();
    if (!got) co_return got.error();
    std::unique_ptr<Conn> conn = std::move(*got);
    http::request<http::string_body> req{to_verb(method), config_.path_prefix + target, 11};
    req.set(http::field::host, config_.host);
    req.set(http::field::user_agent, config_.user_agent);
    req.set(http::field::accept, "application/json");
    if (const auto& tok = token_.current(); !tok.empty()) req.set(http::field::authorization, "Bearer " + tok);
    if (!body.empty()) {
      req.set(http::field::content_type, method == HttpMethod::kPatch ? "application/strategic-merge-patch+json"
                                                                      : "application/json");
      req.body() = body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    ++requests_;
    beast::get_lowest_layer(conn->stream).expires_after(config_.request_timeout);
    auto [wec, wn] = co_await http::async_write(conn->stream, req, kTuple);
    co_await throw_if_cancelled();
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBody);
    boost::system::error_code rec;
    if (!wec) std::tie(rec, std::ignore) = co_await http::async_read(conn->stream, conn->buffer, parser, kTuple);
    co_await throw_if_cancelled();
    if (wec || rec) {
      // A reused keep-alive connection may have been closed by the server while idle: retry once, on
      // a new connection (the other idle ones are as old).
      if (conn->reused && attempt == 0) {
        shared_->drop_idle();
        continue;
      }
      co_return io_error(wec ? "send request" : "read response", wec ? wec : rec);
    }
    auto res = parser.release();
    HttpResponse out{static_cast<int>(res.result_int()), std::move(res.body()), parse_retry_after(res.base())};
    if (res.keep_alive()) shared_->give_back(std::move(conn));
    if (out.status == 401 && token_.from_file() && !auth_retried) {
      auth_retried = true;  // the token may have been rotated since we read it
      token_.current(true);
      continue;
    }
    if (out.status == 429 && throttled < kMax429Retries) {
      ++throttled;
      co_await sleep(out.retry_after.count() > 0 ? out.retry_after : std::chrono::milliseconds(1000));
      continue;
    }
    co_return out;
  }
}

awaitable<ApiResult<std::unique_ptr<HttpsTransport::Conn>>> HttpsTransport::idle_or_new() {
  if (auto conn = shared_->take_idle()) co_return conn;
  co_return co_await connect();
}

awaitable<ApiResult<std::unique_ptr<WatchStream>>> HttpsTransport::open_watch(std::string target,
                                                                              std::size_t max_event_bytes,
                                                                              std::chrono::seconds timeout) {
  co_await wait_for_limiter(http::verb::get, target);
  http::request<http::empty_body> req{http::verb::get, config_.path_prefix + target, 11};
  req.set(http::field::host, config_.host);
  req.set(http::field::user_agent, config_.user_agent);
  req.set(http::field::accept, "application/json");
  if (const auto& tok = token_.current(); !tok.empty()) req.set(http::field::authorization, "Bearer " + tok);
  ++requests_;
  std::unique_ptr<Conn> conn;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser;
  // A watch takes an idle keep-alive connection when there is one (no handshake), and holds it.
  for (int attempt = 0;; ++attempt) {
    auto got = co_await idle_or_new();
    if (!got) co_return got.error();
    conn = std::move(*got);
    // Until the response header arrives a watch is an ordinary request: a server that accepts and
    // never answers is given up on after request_timeout, not after the whole watch timeout.
    beast::get_lowest_layer(conn->stream).expires_after(config_.request_timeout);
    auto [wec, wn] = co_await http::async_write(conn->stream, req, kTuple);
    co_await throw_if_cancelled();
    boost::system::error_code hec;
    parser = std::make_unique<http::response_parser<http::buffer_body>>();
    parser->body_limit(boost::none);
    if (!wec) std::tie(hec, std::ignore) = co_await http::async_read_header(conn->stream, conn->buffer, *parser, kTuple);
    co_await throw_if_cancelled();
    if (!wec && !hec) break;
    // The server may have closed a kept connection while it was idle: once more on a new one.
    if (conn->reused && attempt == 0) {
      shared_->drop_idle();
      continue;
    }
    co_return io_error(wec ? "send watch request" : "read watch response", wec ? wec : hec);
  }
  const int status = static_cast<int>(parser->get().result_int());
  // The server ends the watch after timeoutSeconds; the margin only catches a silent peer.
  beast::get_lowest_layer(conn->stream).expires_after(timeout + std::chrono::seconds(60));
  if (status != 200) {
    if (status == 401) token_.current(true);
    std::string body;
    char chunk[8192];
    while (!parser->is_done() && body.size() < (1u << 20)) {
      parser->get().body().data = chunk;
      parser->get().body().size = sizeof chunk;
      auto [ec, n] = co_await http::async_read(conn->stream, conn->buffer, *parser, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      body.append(chunk, sizeof chunk - parser->get().body().size);
      if (ec) break;
    }
    co_return decode_status(status, body, parse_retry_after(parser->get().base()));
  }
  co_return std::unique_ptr<WatchStream>(
      std::make_unique<HttpsWatchStream>(std::move(conn), std::move(parser), max_event_bytes));
}

}  // namespace nvdra::k8s
