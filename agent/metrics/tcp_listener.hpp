#pragma once
// The listening socket and the accept loop that the scrape server (MetricsServer) and nvdra-webhook
// (admission::WebhookServer) share; each serves its own connections.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <cstddef>
#include <functional>
#include <list>

namespace nvdra::metrics {

// Opens, binds (SO_REUSEADDR) and listens `acceptor` at `where`. An unspecified IPv6 address also
// takes IPv4; where the kernel or namespace has no IPv6, every IPv4 interface instead. The error when
// it cannot listen (the caller names its flag).
boost::system::error_code listen_at(boost::asio::ip::tcp::acceptor& acceptor,
                                    const boost::asio::ip::tcp::endpoint& where);

// A server's live connections: each connection's coroutine registers its stream while it runs and
// ends at its next step once `stopping` is set and its socket closed.
struct OpenConnections {
  std::list<boost::beast::tcp_stream*> streams;
  bool stopping = false;
};

// Accepts until cancelled (shutdown) or failed. A connection beyond `limit` open is closed at once,
// after `refuse()` (a log line, a counter); every other goes to `serve(socket)`, which spawns its
// coroutine. Then stops listening, sets `open.stopping`, closes every open connection and rethrows.
// `acceptor` and `open` must outlive the returned awaitable.
boost::asio::awaitable<void> accept_connections(boost::asio::ip::tcp::acceptor& acceptor, OpenConnections& open,
                                                std::size_t limit, std::function<void()> refuse,
                                                std::function<void(boost::asio::ip::tcp::socket)> serve);

}  // namespace nvdra::metrics
