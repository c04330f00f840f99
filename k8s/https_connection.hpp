#pragma once
// Internal to HttpsTransport (https_transport.cpp and its test): one TLS connection, and the idle ones
// every client of one API server shares. An agent has a client per driver and purpose (slices, claim
// reads, Events), each with its own rate limits; the keep-alive connections under them are one pool:
// an agent on an 8-GPU node opens 5 TLS connections to start instead of 11, and holds 5 once idle (its
// 3 watches, 2 kept) instead of 10. TLS sessions are not resumed: as client-go, every new connection
// verifies the server's certificate.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

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
  // As many as one client kept before they were shared: after a burst the rest close (~70 KiB of
  // buffers each, on both sides).
  static constexpr std::size_t kMaxIdle = 4;

  static std::shared_ptr<SharedConnections> for_server(boost::asio::any_io_executor ex,
                                                       const std::shared_ptr<boost::asio::ssl::context>& ctx,
                                                       const std::string& host, const std::string& port);

  std::unique_ptr<HttpsConnection> take_idle();
  // Kept for the next exchange or watch of any client, unless kMaxIdle are idle already (then it closes).
  void give_back(std::unique_ptr<HttpsConnection> conn);
  // A kept connection failed: the others went idle at about the same time (a restarted server).
  void drop_idle() { idle_.clear(); }
  std::size_t idle() const { return idle_.size(); }

 private:
  std::vector<std::unique_ptr<HttpsConnection>> idle_;  // the most recently used last
};

}  // namespace nvdra::k8s
