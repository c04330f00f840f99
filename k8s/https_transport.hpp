#pragma once
// Internal to HttpsApiServer: TLS connections, keep-alive pool, token source, one HTTP exchange,
// and the streaming watch reader. Beast and SSL types stay behind this header's .cpp.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "k8s/api_error.hpp"
#include "k8s/api_server.hpp"
#include "k8s/client_config.hpp"
#include "k8s/rate_limiter.hpp"

namespace nvdra::k8s {

struct HttpsConnection;
class SharedConnections;

// kPatch sends a strategic merge patch (the only kind the agent writes).
enum class HttpMethod { kGet, kPost, kPut, kPatch, kDelete };

struct HttpResponse {
  int status = 0;
  std::string body;
  std::chrono::milliseconds retry_after{0};
};

// The bearer token: static, or read from a file again whenever its modification time changes.
class TokenSource {
 public:
  TokenSource(std::string token, std::string file) : token_(std::move(token)), file_(std::move(file)) {}
  const std::string& current(bool force_reload = false);
  bool from_file() const { return !file_.empty(); }

 private:
  std::string token_;
  std::string file_;
  std::filesystem::file_time_type mtime_{};
};

class HttpsTransport {
 public:
  static Result<std::unique_ptr<HttpsTransport>> create(boost::asio::any_io_executor ex, ClientConfig config);
  ~HttpsTransport();

  // One request/response on a pooled connection, after the rate limiter; 401 → token re-read and one
  // retry; 429 → wait Retry-After and retry (bounded). Non-2xx answers are returned, not errors.
  boost::asio::awaitable<ApiResult<HttpResponse>> exchange(HttpMethod method, std::string target, std::string body);
  // Starts a watch on a connection it then holds (an idle one when there is one): a 200 gives the
  // stream, anything else the decoded Status.
  boost::asio::awaitable<ApiResult<std::unique_ptr<WatchStream>>> open_watch(std::string target,
                                                                             std::size_t max_event_bytes,
                                                                             std::chrono::seconds timeout);
  uint64_t requests() const { return requests_; }
  uint64_t connections_opened() const { return connections_opened_; }

  using Conn = HttpsConnection;

 private:
  HttpsTransport(boost::asio::any_io_executor ex, ClientConfig config);
  boost::asio::awaitable<ApiResult<std::unique_ptr<Conn>>> connect();
  boost::asio::awaitable<ApiResult<std::unique_ptr<Conn>>> idle_or_new();
  boost::asio::awaitable<void> wait_for_limiter(boost::beast::http::verb verb, std::string_view target);
  boost::asio::awaitable<void> acquire_slot();
  void release_slot();
  void wake_if_free();
  boost::asio::awaitable<ApiResult<HttpResponse>> exchange_in_slot(HttpMethod method, std::string target,
                                                                   std::string body);
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);

  boost::asio::any_io_executor ex_;
  ClientConfig config_;
  struct Tls;
  std::unique_ptr<Tls> tls_;
  RateLimiter limiter_;
  TokenSource token_;
  std::shared_ptr<SharedConnections> shared_;  // the idle connections of every client of the server
  int busy_ = 0;  // exchanges holding a slot
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
  uint64_t requests_ = 0;
  uint64_t connections_opened_ = 0;
};

}  // namespace nvdra::k8s
