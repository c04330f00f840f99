#include "agent/metrics/tcp_listener.hpp"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <utility>

namespace nvdra::metrics {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

boost::system::error_code listen_at(tcp::acceptor& acceptor, const tcp::endpoint& where) {
  boost::system::error_code ec;
  auto open = [&](const tcp::endpoint& e) {
    ec.clear();
    if (acceptor.is_open()) acceptor.close(ec);
    acceptor.open(e.protocol(), ec);
    if (!ec && e.address().is_v6() && e.address().is_unspecified()) acceptor.set_option(asio::ip::v6_only(false), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(e, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  };
  open(where);
  // No IPv6 in this kernel or namespace: every IPv4 interface instead.
  if (ec && where.address().is_v6() && where.address().is_unspecified()) open(tcp::endpoint(tcp::v4(), where.port()));
  return ec;
}

asio::awaitable<void> accept_connections(tcp::acceptor& acceptor, OpenConnections& open, std::size_t limit,
                                         std::function<void()> refuse, std::function<void(tcp::socket)> serve) {
  std::exception_ptr failure;
  try {
    for (;;) {
      auto socket = co_await acceptor.async_accept(asio::use_awaitable);
      if (open.streams.size() >= limit) {
        refuse();
        continue;  // the socket closes as it goes out of scope
      }
      serve(std::move(socket));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  // Cancelled (shutdown) or failed: stop listening and end every connection's coroutine.
  open.stopping = true;
  boost::system::error_code ignored;
  acceptor.close(ignored);
  for (auto* stream : open.streams) stream->socket().close(ignored);
  std::rethrow_exception(failure);
}

}  // namespace nvdra::metrics
