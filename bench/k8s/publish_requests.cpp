// API requests from start to "published and converged", from an unchanged restart, and while idle
// (watch re-opens at a shortened watch timeout, jittered over [T, 2T) as in production where T is
// 300 s), all counted by the API-server double.
// Usage: k8s_publish_requests [devices] [idle seconds, default 10]   (NVDRA_SOURCE_DIR=<checkout>)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "k8s/https_api_server.hpp"
#include "k8s/slice_publisher.hpp"
#include "test/k8s/double_process.hpp"

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace nvdra::k8s;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 8;
  const int idle_seconds = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::chrono::seconds watch_timeout{2};
  testing::DoubleProcess dbl;
  asio::io_context io;
  nvdra::DriverResources desired;
  for (int i = 0; i < n; ++i) {
    nvdra::PublishedDevice d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes["index"] = int64_t{i};
    d.capacity["memory"] = "80Gi";
    desired.devices.push_back(d);
  }
  auto run_once = [&](const char* label, bool idle) -> asio::awaitable<void> {
    testing::Admin admin(io.get_executor(), dbl.client_config());
    co_await admin.post(std::string("/admin/requests/reset"));
    auto api = *HttpsApiServer::create(io.get_executor(), dbl.client_config());
    PublisherOptions o;
    o.driver = "gpu.nvidia.com";
    o.node_name = "node1";
    if (idle) o.watch_timeout = watch_timeout;
    SlicePublisher publisher(io.get_executor(), api, o);
    publisher.set_desired(desired);
    // Converged, counted; then (idle) the same publisher left running with nothing to change.
    auto observe = [&]() -> asio::awaitable<void> {
      co_await publisher.wait_converged();
      std::printf("%s: %d devices: %zu API requests (%zu writes) from start to converged\n", label, n,
                  co_await admin.requests(), co_await admin.writes());
      if (!idle) co_return;
      co_await admin.post(std::string("/admin/requests/reset"));
      asio::steady_timer quiet(io.get_executor(), std::chrono::seconds(idle_seconds));
      co_await quiet.async_wait(asio::use_awaitable);
      std::printf("idle: %zu API requests (%zu writes) in %d s at a watch timeout of %lld s (jittered over "
                  "[%lld, %lld) s; production: 300 s)\n",
                  co_await admin.requests(), co_await admin.writes(), idle_seconds,
                  static_cast<long long>(watch_timeout.count()), static_cast<long long>(watch_timeout.count()),
                  static_cast<long long>(2 * watch_timeout.count()));
    };
    co_await (publisher.run() || observe());
  };
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    co_await run_once("first start", false);
    co_await run_once("unchanged restart", true);
  }, asio::detached);
  io.run();
  return 0;
}
