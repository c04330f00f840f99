// API requests from start to "published and converged", and from an unchanged restart, counted by
// the API-server double. Usage: k8s_publish_requests [devices]   (NVDRA_SOURCE_DIR=<checkout>)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>

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
  auto run_once = [&](const char* label) -> asio::awaitable<void> {
    testing::Admin admin(io.get_executor(), dbl.client_config());
    co_await admin.post(std::string("/admin/requests/reset"));
    auto api = *HttpsApiServer::create(io.get_executor(), dbl.client_config());
    PublisherOptions o;
    o.driver = "gpu.nvidia.com";
    o.node_name = "node1";
    SlicePublisher publisher(io.get_executor(), api, o);
    publisher.set_desired(desired);
    co_await (publisher.run() || publisher.wait_converged());
    const auto requests = co_await admin.requests();
    const auto writes = co_await admin.writes();
    std::printf("%s: %d devices: %zu API requests (%zu writes) from start to converged\n", label, n, requests, writes);
  };
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    co_await run_once("first start");
    co_await run_once("unchanged restart");
  }, asio::detached);
  io.run();
  std::printf("idle: one watch re-open per watch timeout (300 s) = 12 GET requests/hour, 0 writes\n");
  return 0;
}
