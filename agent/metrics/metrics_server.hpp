#pragma once
// MetricsServer — the Prometheus scrape endpoint (--http-endpoint, --metrics-path): plain HTTP/1.1
// with Boost.Beast on the agent's io_context, one coroutine per connection.
//  * GET/HEAD of the path answer the page (Metrics::render) as text/plain; version=0.0.4; other
//    paths 404 ("404 page not found", as Go's mux says), other methods 405.
//  * Bounds: request head 8 KiB, request body 4 KiB (413 past it), 10 s to read a request (also
//    the keep-alive idle limit), 10 s to write the answer, 32 connections at once (more are
//    closed on accept).
//  * run() accepts until cancelled; it then closes the listener and every open connection, whose
//    coroutines end at their next step. Their shared state outlives the server object.
// The listener is bound by the constructor, so a bad or taken address fails start-up with one line.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace nvdra::metrics {

struct MetricsServerLimits {
  std::size_t header_bytes = 8 * 1024;
  std::size_t body_bytes = 4 * 1024;
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::size_t connections = 32;
};

// What the server serves: the page text and the promhttp-style accounting around each scrape.
struct MetricsPage {
  std::function<std::string()> render;
  std::function<void()> started = [] {};
  std::function<void(int)> finished = [](int) {};
};

class MetricsServer {
 public:
  // `endpoint` is "[host]:port" (port 0: any free port); an empty host listens on every interface.
  // Throws std::runtime_error naming the endpoint when it cannot listen there.
  MetricsServer(boost::asio::any_io_executor ex, const std::string& endpoint, std::string path, MetricsPage page,
                MetricsServerLimits limits = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  boost::asio::awaitable<void> run();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// "[host]:port" → where to listen; throws std::runtime_error naming the endpoint.
boost::asio::ip::tcp::endpoint parse_listen_endpoint(const std::string& endpoint);

}  // namespace nvdra::metrics
