#pragma once
// WebhookServer — the validating admission webhook over HTTPS (Boost.Beast + OpenSSL) on one
// io_context, one coroutine per connection:
//  * POST /validate-resource-claim-parameters with Content-Type application/json: review() →
//    200 with the response AdmissionReview, or 400 with a plain-text refusal (upstream's codes);
//    415 for another content type, 405 for another method; GET /readyz → "ok"; else 404.
//  * TLS 1.2+ with the certificate of TlsFiles, re-read when its files change (new connections get
//    the new one). A client that does not speak TLS gets a plain-HTTP 400 ("Client sent an HTTP
//    request to an HTTPS server.", as Go's server says) and is closed.
//  * Bounds: body kMaxReviewBytes (413 past it), head 16 KiB, 10 s for the handshake and for each
//    request read or answer written, `connections` at once. A bad peer only ends its own connection.
//  * run() accepts until cancelled, then closes the listener and every connection.
// The listener is bound by the constructor (std::runtime_error naming the address).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::admission {

class TlsFiles;
class WebhookMetrics;

struct WebhookServerOptions {
  std::string listen = ":443";  // "[host]:port"
  claims::ConfigGates gates;
  std::chrono::milliseconds io_timeout{10'000};
  std::size_t connections = 256;
};

class WebhookServer {
 public:
  // `tls` and `metrics` must outlive run().
  WebhookServer(boost::asio::any_io_executor ex, WebhookServerOptions options, TlsFiles& tls, WebhookMetrics& metrics);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  boost::asio::awaitable<void> run();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace nvdra::admission
