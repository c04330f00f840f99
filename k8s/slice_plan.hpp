#pragma once
// Pure publishing logic, as the resourceslice controller upstream's plugins are built with
// (k8s.io/dynamic-resource-allocation v0.36; shared/reference/kubelet-dra-protocol.md §5.3):
// desired DriverResources → slice contents within the server's per-slice limits, then desired vs.
// actual → the fewest writes, with the pool's generation and resourceSliceCount kept right and
// slices named and matched by their index (slice_names.hpp). No I/O here, so every rule is
// unit-tested.
#include <cstdint>
#include <string>
#include <vector>

#include "agent/base/device.hpp"
#include "k8s/slice_codec.hpp"

namespace nvdra::k8s {

inline constexpr std::size_t kMaxDevicesPerSlice = 128;
inline constexpr std::size_t kMaxDevicesPerSliceWithTaintsOrCounters = 64;  // 1.35+
inline constexpr std::size_t kMaxCounterSetsPerSlice = 8;

// Where shared counter sets go: 1.35+ wants them in slices of their own (either-or rule); 1.34 wants
// them in the same slice as the devices that consume them. Pick with layout_for(server version).
enum class CounterLayout { kSeparateSlices, kWithConsumers };
CounterLayout layout_for(int major, int minor);

// What the server accepts, per version and per served field (server_features.hpp finds out):
//  * layout: where counter sets go (above);
//  * list_attributes: DeviceAttribute list values (`ints`, 1.36+, DRAListTypeAttributes) are kept;
//    otherwise a one-element list is published as its single value and longer lists are dropped;
//  * multiple_allocations: allowMultipleAllocations and capacity request policies (consumable
//    capacity) are kept; otherwise dropped (the devices are then allocated whole, one claim each);
//  * lists_are_advanced: 1.36+ counts list-valued attributes with taints and counters for the
//    64-device cap (ResourceSliceMaxDevicesWithAdvancedFeatures).
struct SliceRules {
  CounterLayout layout = CounterLayout::kSeparateSlices;
  bool list_attributes = false;
  bool multiple_allocations = false;
  bool lists_are_advanced = false;
  bool operator==(const SliceRules&) const = default;
};

std::vector<SliceContent> plan_slices(const DriverResources& desired, CounterLayout layout);
std::vector<SliceContent> plan_slices(const DriverResources& desired, const SliceRules& rules);

struct PoolIdentity {
  std::string driver;
  std::string node_name;  // also the pool name (NVIDIA convention)
  std::string node_uid;   // for the ownerReference
};

struct WritePlan {
  std::vector<SliceObject> deletes;  // name + uid + resource_version (preconditions)
  std::vector<SliceObject> updates;  // full objects with name + resource_version
  std::vector<SliceObject> creates;  // full objects with generate_name "<index>-<driver>-<node>-"
  int64_t generation = 0;
  bool empty() const { return deletes.empty() && updates.empty() && creates.empty(); }
  std::size_t writes() const { return deletes.size() + updates.size() + creates.size(); }
};

// `actual`: every slice the watch sees for this node and driver. A slice is kept (updated in place
// when its content differs) when its name encodes a position of the desired list and it carries
// the pool's highest generation; others are deleted, as upstream's controller does.
WritePlan plan_writes(const std::vector<SliceContent>& desired, const std::vector<SliceObject>& actual,
                      const PoolIdentity& pool);

}  // namespace nvdra::k8s
