#pragma once
// Fixture for tests against the API-server double: one double per test, a coroutine test body run
// on a fresh io_context under a deadline, and device lists built in the test.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>

#include "agent/base/device.hpp"
#include "k8s/https_api_server.hpp"
#include "k8s/slice_codec.hpp"
#include "k8s/slice_publisher.hpp"
#include "test/k8s/double_process.hpp"

// gtest's ASSERT_* return from the function, which a coroutine may not: these co_return instead.
#define CO_ASSERT_EQ(a, b) \
  do {                     \
    EXPECT_EQ(a, b);       \
    if (!((a) == (b))) co_return; \
  } while (0)
#define CO_ASSERT_TRUE(c) \
  do {                    \
    EXPECT_TRUE(c);       \
    if (!(c)) co_return;  \
  } while (0)

namespace nvdra::k8s::testing {

namespace asio = boost::asio;
using asio::awaitable;

inline DriverResources make_gpus(int n, bool tainted = false, int first = 0) {
  DriverResources r;
  for (int i = first; i < first + n; ++i) {
    PublishedDevice d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes["type"] = std::string("gpu");
    d.attributes["index"] = int64_t{i};
    d.attributes["uuid"] = "GPU-" + std::to_string(10000 + i) + "-aaaa-bbbb-cccc";
    d.attributes["driverVersion"] = SemVer{"580.65.6"};
    d.attributes["resource.kubernetes.io/pcieRoot"] = std::string("pci0000:") + std::to_string(i % 10);
    d.capacity["memory"] = "80Gi";
    if (tainted) d.taints.push_back(DeviceTaint{"gpu.nvidia.com/unhealthy", "xid-79", "NoSchedule"});
    r.devices.push_back(std::move(d));
  }
  return r;
}

class DoubleTest : public ::testing::Test {
 protected:
  virtual std::vector<std::string> double_args() const { return {}; }
  void SetUp() override { double_ = std::make_unique<DoubleProcess>(double_args()); }

  std::shared_ptr<HttpsApiServer> make_api(ClientConfig cfg) {
    auto api = HttpsApiServer::create(io_.get_executor(), std::move(cfg));
    if (!api) throw std::runtime_error(api.error().describe());
    return *api;
  }
  std::shared_ptr<HttpsApiServer> make_api() { return make_api(double_->client_config()); }

  std::unique_ptr<SlicePublisher> make_publisher(std::shared_ptr<ApiServer> api, std::string driver = "gpu.nvidia.com",
                                                 std::shared_ptr<SliceWatch> watch = nullptr) {
    PublisherOptions o;
    o.driver = std::move(driver);
    o.watch = std::move(watch);
    o.node_name = "node1";
    o.backoff_base = std::chrono::milliseconds(50);
    o.backoff_cap = std::chrono::milliseconds(1000);
    return std::make_unique<SlicePublisher>(io_.get_executor(), std::move(api), o);
  }

  // Runs `body` to completion on io_ with a 120 s deadline; rethrows its failure.
  void run(std::function<awaitable<void>()> body) {
    std::exception_ptr failure;
    asio::co_spawn(
        io_,
        [&]() -> awaitable<void> {
          using namespace asio::experimental::awaitable_operators;
          asio::steady_timer deadline(io_, std::chrono::seconds(120));
          auto r = co_await (body() || deadline.async_wait(asio::use_awaitable));
          if (r.index() == 1) throw std::runtime_error("test deadline of 120 s reached");
        },
        [&](std::exception_ptr e) { failure = e; });
    io_.run();
    io_.restart();
    if (failure) std::rethrow_exception(failure);
  }

  // Stored slices of `driver` on node1, decoded.
  awaitable<std::vector<SliceObject>> stored(ApiServer& api, std::string driver = "gpu.nvidia.com") {
    ListOptions lo;  // named: GCC 12 double-destroys braced temporaries passed to coroutines
    lo.field_selector = "spec.nodeName=node1,spec.driver=" + driver;
    auto res = co_await api.list(kResourceSlicesV1, std::string(), lo);
    if (!res) throw std::runtime_error(res.error().describe());
    std::vector<SliceObject> out;
    for (const auto& item : res->items) out.push_back(*decode_slice(item));
    co_return out;
  }

  asio::io_context io_;
  std::unique_ptr<DoubleProcess> double_;
};

// What kubelet does at its start: delete every ResourceSlice of the node.
inline awaitable<void> wipe_node_slices(Admin& admin) {
  boost::json::object selector;
  selector["resource"] = "resourceslices";
  selector["fieldSelector"] = "spec.nodeName=node1";
  co_await admin.post(std::string("/admin/delete"), std::move(selector));
}

// Waits (deadline 10 s) until the double streams at least one watch.
inline awaitable<void> wait_for_open_watch(Admin& admin) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto answer = co_await admin.get(std::string("/admin/watches"));
    if (answer.as_object().at("open").to_number<int64_t>() > 0) co_return;
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no watch opened within 10 s");
    asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(20));
    co_await pause.async_wait(asio::use_awaitable);
  }
}

// Counts convergences so a test can wait for "converged again" without polling.
struct ConvergenceCounter {
  explicit ConvergenceCounter(SlicePublisher& p, asio::any_io_executor ex) : signal(ex) {
    p.on_converged([this] {
      ++count;
      signal.notify();
    });
  }
  awaitable<void> wait_for(int n) {
    while (count < n) co_await signal.wait();
  }
  int count = 0;
  ChangeSignal signal;
};

}  // namespace nvdra::k8s::testing
