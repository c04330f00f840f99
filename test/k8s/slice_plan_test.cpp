#include "k8s/slice_plan.hpp"

#include <gtest/gtest.h>

#include "k8s/slice_codec.hpp"
#include "k8s/slice_names.hpp"

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

// `gpus` GPUs in the order given, each a counter set and two devices consuming it, grouped per GPU.
DriverResources grouped(const std::vector<std::string>& gpus) {
  DriverResources r;
  for (const auto& g : gpus) {
    r.shared_counters.push_back(CounterSet{g + "-counter-set", {{"memory", "80Gi"}}});
    for (const auto* suffix : {"-mig-b", "", "-mig-a"}) {  // not in name order: the plan sorts a group
      PublishedDevice d;
      d.name = g + suffix;
      d.consumes_counters.push_back(CounterConsumption{g + "-counter-set", {{"memory", "10Gi"}}});
      d.slice_group = "bus-of-" + g;
      r.devices.push_back(d);
    }
  }
  return r;
}

std::vector<std::string> names(const SliceContent& s) {
  std::vector<std::string> out;
  for (const auto& d : s.devices) out.push_back(d.name);
  return out;
}

TEST(SlicePlan, GroupedDevicesGetASliceEachAfterTheCounterSetsAtMostEightASliceOn135) {
  std::vector<std::string> gpus;
  for (int i = 9; i >= 0; --i) gpus.push_back("gpu-" + std::to_string(i));  // the groups' order, not the names'
  const auto desired = grouped(gpus);
  const auto slices = plan_slices(desired, CounterLayout::kSeparateSlices);
  ASSERT_EQ(slices.size(), 2u + 10u);
  EXPECT_EQ(slices[0].shared_counters.size(), 8u);
  EXPECT_EQ(slices[1].shared_counters.size(), 2u);
  EXPECT_EQ(slices[0].shared_counters.front().name, "gpu-9-counter-set");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto& s = slices[2 + i];
    EXPECT_TRUE(s.shared_counters.empty());
    EXPECT_EQ(names(s), (std::vector<std::string>{gpus[i], gpus[i] + "-mig-a", gpus[i] + "-mig-b"}));
    for (const auto& d : s.devices) EXPECT_TRUE(d.slice_group.empty()) << "the group is not published";
  }
}

TEST(SlicePlan, GroupedDevicesCarryTheirCounterSetsInTheirSliceOn134) {
  const auto slices = plan_slices(grouped({"gpu-1", "gpu-0"}), CounterLayout::kWithConsumers);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(names(slices[0]), (std::vector<std::string>{"gpu-1", "gpu-1-mig-a", "gpu-1-mig-b"}));
  ASSERT_EQ(slices[0].shared_counters.size(), 1u);
  EXPECT_EQ(slices[0].shared_counters[0].name, "gpu-1-counter-set");
  ASSERT_EQ(slices[1].shared_counters.size(), 1u);
  EXPECT_EQ(slices[1].shared_counters[0].name, "gpu-0-counter-set");
}

TEST(SlicePlan, AGroupWithoutCountersStillGetsItsOwnSlice) {
  auto desired = devices(3);
  for (auto& d : desired.devices) d.slice_group = d.name;  // DynamicMIG on GPUs that cannot partition
  for (auto layout : {CounterLayout::kSeparateSlices, CounterLayout::kWithConsumers})
    EXPECT_EQ(plan_slices(desired, layout).size(), 3u);
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
  EXPECT_EQ(plan.creates[0].generate_name, "00000-gpu.nvidia.com-node1-");
  EXPECT_EQ(plan.creates[1].generate_name, "00001-gpu.nvidia.com-node1-");
  EXPECT_TRUE(plan_writes(desired, stored_after(plan), kPool).empty());
}

// A slice as upstream's controller leaves it: its name, the pool's generation, the Node as owner.
SliceObject upstream_slice(const std::string& name, const SliceContent& content, int64_t generation, int64_t count) {
  SliceObject s;
  s.name = name;
  s.uid = "uid-" + name;
  s.resource_version = "7";
  s.driver = kPool.driver;
  s.node_name = s.pool_name = kPool.node_name;
  s.generation = generation;
  s.resource_slice_count = count;
  s.owners = {OwnerReference{"v1", "Node", kPool.node_name, kPool.node_uid, true}};
  s.content = content;
  return *decode_slice(encode_slice(s));
}

TEST(SlicePlan, SlicesUpstreamPublishedAreAdoptedWithoutAWrite) {
  const auto desired = plan_slices(devices(200), CounterLayout::kSeparateSlices);
  // Listed in any order, with upstream's random suffixes and a generation it had reached.
  const std::vector<SliceObject> stored{upstream_slice("00001-gpu.nvidia.com-node1-q7x2k", desired[1], 4, 2),
                                        upstream_slice("00000-gpu.nvidia.com-node1-b8m4z", desired[0], 4, 2)};
  EXPECT_TRUE(plan_writes(desired, stored, kPool).empty());
}

TEST(SlicePlan, AnAdoptedSliceWhoseDevicesChangedIsUpdatedUnderItsOwnName) {
  const auto before = plan_slices(devices(4), CounterLayout::kSeparateSlices);
  const std::vector<SliceObject> stored{upstream_slice("00000-gpu.nvidia.com-node1-b8m4z", before[0], 4, 1)};
  auto changed = devices(4);
  changed.devices[1].attributes["index"] = int64_t{9};
  const auto plan = plan_writes(plan_slices(changed, CounterLayout::kSeparateSlices), stored, kPool);
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_TRUE(plan.deletes.empty());
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_EQ(plan.updates[0].name, "00000-gpu.nvidia.com-node1-b8m4z");
  EXPECT_EQ(plan.updates[0].uid, "uid-00000-gpu.nvidia.com-node1-b8m4z");
  EXPECT_EQ(plan.generation, 4);
}

TEST(SlicePlan, TheSliceAtEachPositionIsTheOneWhoseNameEncodesIt) {
  // Contents swapped against the names: each slice keeps its name and gets its position's devices.
  const auto desired = plan_slices(devices(200), CounterLayout::kSeparateSlices);
  const std::vector<SliceObject> stored{upstream_slice("00000-gpu.nvidia.com-node1-aaaaa", desired[1], 1, 2),
                                        upstream_slice("00001-gpu.nvidia.com-node1-bbbbb", desired[0], 1, 2)};
  const auto plan = plan_writes(desired, stored, kPool);
  ASSERT_EQ(plan.updates.size(), 2u);
  EXPECT_TRUE(plan.creates.empty() && plan.deletes.empty());
  EXPECT_EQ(plan.generation, 2);  // two in-place updates: a new generation
  for (const auto& u : plan.updates) {
    const auto i = decode_slice_index(u.name, 5);
    ASSERT_TRUE(i.has_value());
    EXPECT_EQ(u.content, desired[*i]) << u.name;
  }
}

TEST(SlicePlan, NamesWithoutAnIndexAreReplacedAsUpstreamReplacesThem) {
  // kubelet 1.34/1.35's helper (and nvdra before) named slices "<node>-<driver>-": upstream's
  // controller deletes those and creates indexed ones, and so does nvdra, so both agree.
  const auto desired = plan_slices(devices(4), CounterLayout::kSeparateSlices);
  const std::vector<SliceObject> stored{upstream_slice("node1-gpu.nvidia.com-x8k2m", desired[0], 1, 1)};
  const auto plan = plan_writes(desired, stored, kPool);
  ASSERT_EQ(plan.deletes.size(), 1u);
  EXPECT_EQ(plan.deletes[0].name, "node1-gpu.nvidia.com-x8k2m");
  ASSERT_EQ(plan.creates.size(), 1u);
  EXPECT_EQ(plan.creates[0].generate_name, "00000-gpu.nvidia.com-node1-");
  EXPECT_EQ(plan.generation, 2);
}

TEST(SlicePlan, AnOlderGenerationADuplicateIndexAndAnIndexBeyondThePoolAreObsolete) {
  const auto desired = plan_slices(devices(200), CounterLayout::kSeparateSlices);
  const std::vector<SliceObject> stored{
      upstream_slice("00000-gpu.nvidia.com-node1-aaaaa", desired[0], 3, 2),
      upstream_slice("00000-gpu.nvidia.com-node1-zzzzz", desired[0], 3, 2),  // second at position 0
      upstream_slice("00001-gpu.nvidia.com-node1-bbbbb", desired[1], 2, 2),  // older generation
      upstream_slice("00002-gpu.nvidia.com-node1-ccccc", desired[1], 3, 2),  // no position 2
  };
  const auto plan = plan_writes(desired, stored, kPool);
  std::vector<std::string> deleted;
  for (const auto& d : plan.deletes) deleted.push_back(d.name);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{"00000-gpu.nvidia.com-node1-zzzzz", "00001-gpu.nvidia.com-node1-bbbbb",
                                               "00002-gpu.nvidia.com-node1-ccccc"}));
  ASSERT_EQ(plan.creates.size(), 1u);
  EXPECT_EQ(plan.creates[0].generate_name, "00001-gpu.nvidia.com-node1-");
  ASSERT_EQ(plan.updates.size(), 1u);  // the kept slice moves to the new generation
  EXPECT_EQ(plan.updates[0].name, "00000-gpu.nvidia.com-node1-aaaaa");
  EXPECT_EQ(plan.generation, 4);
}

TEST(SlicePlan, SlicesNvdraCreatesAreTheOnesUpstreamWouldMatchToTheirPositions) {
  // Upstream matches a slice to position i when its name decodes to i at the pool's index length
  // and it carries the highest generation: exactly what every slice nvdra creates carries.
  const auto desired = plan_slices(devices(300), CounterLayout::kSeparateSlices);
  const auto plan = plan_writes(desired, {}, kPool);
  const auto stored = stored_after(plan);
  ASSERT_EQ(stored.size(), desired.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(decode_slice_index(stored[i].name, slice_index_length(desired.size())), i) << stored[i].name;
    EXPECT_EQ(stored[i].generation, plan.generation);
    EXPECT_EQ(stored[i].content, desired[i]);
  }
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
