// SlicePublisher against the API-server double (real HTTPS, real OpenAPI validation): publishing,
// restarts without writes, recreation, stale removal, server limits.
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "k8s/object_meta.hpp"
#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::k8s::testing {
namespace {

using namespace asio::experimental::awaitable_operators;

TEST_F(DoubleTest, PublishesOneValidSliceOwnedByTheNode) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    publisher->set_desired(make_gpus(8));
    co_await (publisher->run() || publisher->wait_converged());
    auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices.at(0).content.devices.size(), 8u);
    EXPECT_EQ(slices.at(0).pool_name, "node1");
    EXPECT_EQ(slices.at(0).generation, 1);
    EXPECT_EQ(slices.at(0).resource_slice_count, 1);
    CO_ASSERT_EQ(slices.at(0).owners.size(), 1u);
    EXPECT_EQ(slices.at(0).owners.at(0).kind, "Node");
    EXPECT_FALSE(slices.at(0).owners.at(0).uid.empty());
    EXPECT_TRUE(slices.at(0).name.starts_with("00000-gpu.nvidia.com-node1-"));
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << boost::json::serialize(rejections);
    CO_ASSERT_TRUE(publisher->server_version().has_value());
    EXPECT_EQ(publisher->server_version()->minor, 35);
  });
}

TEST_F(DoubleTest, RestartWithUnchangedDevicesMakesZeroWrites) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    auto first = make_publisher(api);
    first->set_desired(make_gpus(300));
    co_await (first->run() || first->wait_converged());
    co_await admin.post("/admin/requests/reset");
    auto restarted = make_publisher(make_api());
    restarted->set_desired(make_gpus(300));
    co_await (restarted->run() || restarted->wait_converged());
    const auto writes = co_await admin.writes();
    EXPECT_EQ(writes, 0u);
    EXPECT_EQ(restarted->stats().creates + restarted->stats().updates + restarted->stats().deletes, 0u);
  });
}

TEST_F(DoubleTest, ManyDevicesAreSplitWithinTheServersPerSliceLimits) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    auto plain = make_publisher(api);
    plain->set_desired(make_gpus(300));
    co_await (plain->run() || plain->wait_converged());
    auto slices = co_await stored(*api);
    CO_ASSERT_EQ(slices.size(), 3u);
    for (const auto& s : slices) {
      EXPECT_LE(s.content.devices.size(), 128u);
      EXPECT_EQ(s.resource_slice_count, 3);
    }
    auto tainted = make_publisher(api, "compute-domain.nvidia.com");
    tainted->set_desired(make_gpus(130, /*tainted=*/true));
    co_await (tainted->run() || tainted->wait_converged());
    auto tainted_slices = co_await stored(*api, "compute-domain.nvidia.com");
    CO_ASSERT_EQ(tainted_slices.size(), 3u);
    for (const auto& s : tainted_slices) EXPECT_LE(s.content.devices.size(), 64u);
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << boost::json::serialize(rejections);
  });
}

TEST_F(DoubleTest, SlicesDeletedByKubeletAreRecreated) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  ConvergenceCounter converged(*publisher, io_.get_executor());
  run([&]() -> awaitable<void> {
    publisher->set_desired(make_gpus(4));
    auto scenario = [&]() -> awaitable<void> {
      co_await converged.wait_for(1);
      co_await wipe_node_slices(admin);
      co_await converged.wait_for(2);
    };
    co_await (publisher->run() || scenario());
    auto slices = co_await stored(*api);
    CO_ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices.at(0).content.devices.size(), 4u);
    EXPECT_EQ(publisher->stats().creates, 2u);
  });
}

TEST_F(DoubleTest, StaleSlicesFromAnEarlierRunAreRemovedAndADisabledDriverLeavesNone) {
  auto api = make_api();
  run([&]() -> awaitable<void> {
    // An earlier run published 200 devices (two slices); now only 4 remain.
    auto earlier = make_publisher(api);
    earlier->set_desired(make_gpus(200));
    co_await (earlier->run() || earlier->wait_converged());
    auto publisher = make_publisher(make_api());
    ConvergenceCounter converged(*publisher, io_.get_executor());
    publisher->set_desired(make_gpus(4));
    auto scenario = [&]() -> awaitable<void> {
      co_await converged.wait_for(1);
      auto slices = co_await stored(*api);
      EXPECT_EQ(slices.size(), 1u);
      EXPECT_EQ(slices.at(0).content.devices.size(), 4u);
      EXPECT_EQ(slices.at(0).resource_slice_count, 1);
      publisher->set_desired(DriverResources{});  // the driver is disabled
      co_await converged.wait_for(2);
    };
    co_await (publisher->run() || scenario());
    const auto left = co_await stored(*api);
    EXPECT_TRUE(left.empty());
  });
}

// A slice as upstream's controller (k8s.io/dynamic-resource-allocation v0.36) creates it: named
// "<index>-<driver>-<node>-" + the server's suffix, owned by the Node, at some generation it reached.
awaitable<std::string> create_as_upstream(ApiServer& api, std::string generate_name, SliceContent content,
                                          int64_t generation) {
  ObjectKey node_key;
  node_key.name = "node1";
  auto node = co_await api.get(kNodesV1, node_key);
  if (!node) throw std::runtime_error(node.error().describe());
  SliceObject s;
  s.generate_name = std::move(generate_name);
  s.driver = "gpu.nvidia.com";
  s.node_name = s.pool_name = "node1";
  s.generation = generation;
  s.resource_slice_count = 1;
  s.owners = {OwnerReference{"v1", "Node", "node1", read_object_meta(*node)->uid, true}};
  s.content = std::move(content);
  auto created = co_await api.create(kResourceSlicesV1, std::string(), encode_slice(s));
  if (!created) throw std::runtime_error(created.error().describe());
  co_return read_object_meta(*created)->name;
}

TEST_F(DoubleTest, SlicesUpstreamPublishedAreAdoptedWithoutAWrite) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    const auto content = plan_slices(make_gpus(4), CounterLayout::kSeparateSlices).at(0);
    const auto name = co_await create_as_upstream(*api, "00000-gpu.nvidia.com-node1-", content, 5);
    co_await admin.post("/admin/requests/reset");
    auto publisher = make_publisher(api);
    publisher->set_desired(make_gpus(4));
    co_await (publisher->run() || publisher->wait_converged());
    EXPECT_EQ(co_await admin.writes(), 0u);
    const auto slices = co_await stored(*api);
    CO_ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices.at(0).name, name);
    EXPECT_EQ(slices.at(0).generation, 5);
  });
}

TEST_F(DoubleTest, SlicesNamedWithoutAnIndexAreReplacedByIndexedOnes) {
  auto api = make_api();
  run([&]() -> awaitable<void> {
    // kubelet 1.34/1.35's helper (and nvdra before) named them "<node>-<driver>-"; upstream's
    // controller now deletes those, so nvdra does too rather than keep a name upstream would not.
    const auto content = plan_slices(make_gpus(4), CounterLayout::kSeparateSlices).at(0);
    const auto old = co_await create_as_upstream(*api, "node1-gpu.nvidia.com-", content, 1);
    auto publisher = make_publisher(api);
    publisher->set_desired(make_gpus(4));
    co_await (publisher->run() || publisher->wait_converged());
    EXPECT_EQ(publisher->stats().deletes, 1u);
    EXPECT_EQ(publisher->stats().creates, 1u);
    const auto slices = co_await stored(*api);
    CO_ASSERT_EQ(slices.size(), 1u);
    EXPECT_NE(slices.at(0).name, old);
    EXPECT_TRUE(slices.at(0).name.starts_with("00000-gpu.nvidia.com-node1-")) << slices.at(0).name;
    EXPECT_EQ(slices.at(0).generation, 2);
  });
}

class DoubleTest134 : public DoubleTest {
 protected:
  std::vector<std::string> double_args() const override { return {"--version", "1.34"}; }
};

DriverResources dynamic_mig(int gpus) {
  DriverResources r;
  for (int g = 0; g < gpus; ++g) {
    const std::string set = "gpu-" + std::to_string(g) + "-counter-set";
    r.shared_counters.push_back(CounterSet{set, {{"memory", "80Gi"}, {"multiprocessors", "98"}}});
    for (int m = 0; m < 3; ++m) {
      PublishedDevice d;
      d.name = "gpu-" + std::to_string(g) + "-mig-1g10gb-19-" + std::to_string(m);
      d.attributes["type"] = std::string("mig");
      d.capacity["memory"] = "10Gi";
      d.consumes_counters.push_back(CounterConsumption{set, {{"memory", "10Gi"}, {"multiprocessors", "14"}}});
      r.devices.push_back(std::move(d));
    }
  }
  return r;
}

TEST_F(DoubleTest, CountersGoInTheirOwnSliceOnServer135) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    publisher->set_desired(dynamic_mig(2));
    co_await (publisher->run() || publisher->wait_converged());
    auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 2u);  // counters-only, then devices-only
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << boost::json::serialize(rejections);
  });
}

TEST_F(DoubleTest134, CountersTravelWithTheirDevicesOnServer134) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    publisher->set_desired(dynamic_mig(2));
    co_await (publisher->run() || publisher->wait_converged());
    auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 2u);  // one per GPU: its counter set and its MIG devices
    for (const auto& s : slices) EXPECT_EQ(s.content.shared_counters.size(), 1u);
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << boost::json::serialize(rejections);
  });
}

}  // namespace
}  // namespace nvdra::k8s::testing
