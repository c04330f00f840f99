#include "k8s/slice_plan.hpp"

#include <gtest/gtest.h>

#include "k8s/slice_codec.hpp"

namespace nvdra::k8s {
namespace {

DriverResources devices(int n, bool tainted = false) {
  DriverResources r;
  for (int i = 0; i < n; ++i) {
    PublishedDevice d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes["index"] = int64_t{i};
    d.attributes["driverVersion"] = SemVer{"580.65.6"};
    d.capacity["memory"] = "80Gi";
    if (tainted) d.taints.push_back(DeviceTaint{"k", "v", "NoSchedule"});
    r.devices.push_back(d);
  }
  return r;
}

const PoolIdentity kPool{"gpu.nvidia.com", "node1", "node-uid"};

// What the server would hold after applying `plan` to an empty pool.
std::vector<SliceObject> stored_after(const WritePlan& plan) {
  std::vector<SliceObject> out;
  int n = 0;
  for (auto s : plan.creates) {
    s.name = s.generate_name + std::to_string(n++);
    s.uid = "uid-" + s.name;
    s.resource_version = "1";
    out.push_back(*decode_slice(encode_slice(s)));
  }
  return out;
}

TEST(SlicePlan, DevicesAreChunkedAt128OrAt64WithTaintsOn135) {
  EXPECT_EQ(plan_slices(devices(300), CounterLayout::kSeparateSlices).size(), 3u);
  const auto tainted = plan_slices(devices(130, true), CounterLayout::kSeparateSlices);
  ASSERT_EQ(tainted.size(), 3u);
  for (const auto& s : tainted) EXPECT_LE(s.devices.size(), 64u);
  EXPECT_EQ(plan_slices(devices(130, true), CounterLayout::kWithConsumers).size(), 2u);  // 1.34 allows 128
}

TEST(SlicePlan, LayoutFollowsServerVersion) {
  EXPECT_EQ(layout_for(1, 34), CounterLayout::kWithConsumers);
  EXPECT_EQ(layout_for(1, 35), CounterLayout::kSeparateSlices);
  EXPECT_EQ(layout_for(2, 0), CounterLayout::kSeparateSlices);
}

TEST(SlicePlan, EmptyPoolGetsCreatesAtGenerationOneAndThenNeedsNoWrites) {
  const auto desired = plan_slices(devices(200), CounterLayout::kSeparateSlices);
  const auto plan = plan_writes(desired, {}, kPool);
  EXPECT_EQ(plan.creates.size(), 2u);
  EXPECT_EQ(plan.generation, 1);
  for (const auto& s : plan.creates) {
    EXPECT_EQ(s.resource_slice_count, 2);
    ASSERT_EQ(s.owners.size(), 1u);
    EXPECT_EQ(s.owners[0].uid, "node-uid");
  }
  EXPECT_TRUE(plan_writes(desired, stored_after(plan), kPool).empty());
}

TEST(SlicePlan, OneMissingSliceIsRecreatedUnderANewGenerationForAll) {
  const auto desired = plan_slices(devices(200), CounterLayout::kSeparateSlices);
  auto stored = stored_after(plan_writes(desired, {}, kPool));
  stored.pop_back();  // someone deleted one slice
  const auto plan = plan_writes(desired, stored, kPool);
  EXPECT_EQ(plan.creates.size(), 1u);
  EXPECT_EQ(plan.updates.size(), 1u);  // the kept slice moves to the new generation
  EXPECT_EQ(plan.generation, 2);
}

TEST(SlicePlan, SingleChangedSliceIsUpdatedInPlaceKeepingTheGeneration) {
  auto stored = stored_after(plan_writes(plan_slices(devices(4), CounterLayout::kSeparateSlices), {}, kPool));
  auto changed = devices(4);
  changed.devices[2].attributes["index"] = int64_t{42};
  const auto plan = plan_writes(plan_slices(changed, CounterLayout::kSeparateSlices), stored, kPool);
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_EQ(plan.updates[0].name, stored[0].name);
  EXPECT_EQ(plan.updates[0].resource_version, stored[0].resource_version);
  EXPECT_EQ(plan.generation, 1);
}

TEST(SlicePlan, ForeignPoolAndSurplusSlicesAreDeleted) {
  auto stored = stored_after(plan_writes(plan_slices(devices(200), CounterLayout::kSeparateSlices), {}, kPool));
  SliceObject stale = stored[0];
  stale.name = "old";
  stale.pool_name = "old-pool";
  stored.push_back(stale);
  const auto plan = plan_writes(plan_slices(devices(4), CounterLayout::kSeparateSlices), stored, kPool);
  EXPECT_EQ(plan.deletes.size(), 2u);  // the old pool's slice and the now-unneeded second slice
  EXPECT_EQ(plan.updates.size(), 1u);
  EXPECT_TRUE(plan.creates.empty());
}

TEST(SliceCodec, EncodedSliceDecodesToTheSameContent) {
  SliceObject s;
  s.name = "n";
  s.driver = "gpu.nvidia.com";
  s.node_name = s.pool_name = "node1";
  s.generation = 3;
  s.resource_slice_count = 1;
  s.content.devices = devices(2, true).devices;
  s.content.devices[0].consumes_counters.push_back(CounterConsumption{"set", {{"memory", "1Gi"}}});
  s.content.shared_counters.push_back(CounterSet{"set", {{"memory", "80Gi"}}});
  s.content.devices[0].attributes["productName"] = std::string("H100");
  s.content.devices[0].attributes["mig"] = true;
  const auto back = decode_slice(encode_slice(s));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->content, s.content);
  EXPECT_EQ(back->generation, 3);
}

}  // namespace
}  // namespace nvdra::k8s
