#pragma once
// Internal to HttpsTransport (https_transport.cpp and its test): one TLS connection, and the idle ones
// every client of one API server shares. An agent has a client per driver and purpose (slices, claim
// reads, Events), each with its own rate limits; the keep-alive connections under them are one pool:
// an agent on an 8-GPU node opens 5 TLS connections to start instead of 11, and holds 5 once idle (its
// 3 watches, 2 kept) instead of 10; after a burst, up to 8 kept until they expire. TLS sessions are not
// resumed: as client-go, every new connection verifies the server's certificate.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace nvdra::k8s {

struct HttpsConnection {
  HttpsConnection(boost::asio::any_io_executor ex, boost::asio::ssl::context& ctx) : stream(std::move(ex), ctx) {}
  boost::beast::ssl_stream<boost::beast::tcp_stream> stream;
  boost::beast::flat_buffer buffer;
  bool reused = false;
};

// The idle keep-alive connections of every client of one server (host, port, TLS settings) on one
// executor. Executor thread only, as the transports that use it.
class SharedConnections {
 public:
  using Clock = std::chrono::steady_clock;
  // One client's concurrent exchanges (ClientConfig::max_connections): a burst of one client (64
  // concurrent prepares' claim reads) then reuses its connections instead of closing some as they
  // come back and opening others with a full handshake. With 4 kept, each such burst opened ~13.
  static constexpr std::size_t kMaxIdle = 8;
  // Kept unused longer than this, a connection is closed at the pool's next use (client-go's
  // IdleConnTimeout), so an agent back to idle holds its watches and a few kept: no timer, which
  // would keep the io_context running.
  static constexpr Clock::duration kIdleTimeout = std::chrono::seconds(90);

  static std::shared_ptr<SharedConnections> for_server(boost::asio::any_io_executor ex,
                                                       const std::shared_ptr<boost::asio::ssl::context>& ctx,
                                                       const std::string& host, const std::string& port);

  std::unique_ptr<HttpsConnection> take_idle(Clock::time_point now = Clock::now());
  // Kept for the next exchange or watch of any client, unless kMaxIdle are idle already (then it closes).
  void give_back(std::unique_ptr<HttpsConnection> conn, Clock::time_point now = Clock::now());
  // A kept connection failed: the others went idle at about the same time (a restarted server).
  void drop_idle() { idle_.clear(); }
  std::size_t idle() const { return idle_.size(); }

 private:
  struct Idle {
    std::unique_ptr<HttpsConnection> conn;
    Clock::time_point since;
  };
  void close_expired(Clock::time_point now);
  std::vector<Idle> idle_;  // the most recently used last
};

}  // namespace nvdra::k8s
