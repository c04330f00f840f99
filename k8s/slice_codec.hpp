#pragma once
// ResourceSlice (resource.k8s.io/v1) as plain data, and its JSON form: encode with Boost.JSON for
// writes, decode with simdjson from list/watch results. The publisher compares decoded slices with
// what it wants, so both directions cover exactly the fields the publisher owns.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/device.hpp"
#include "agent/base/result.hpp"

namespace nvdra::k8s {

// What one slice carries. Devices are kept sorted by name so that equal content compares equal.
struct SliceContent {
  std::vector<PublishedDevice> devices;
  std::vector<CounterSet> shared_counters;
  bool operator==(const SliceContent&) const = default;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool operator==(const OwnerReference&) const = default;
};

struct SliceObject {
  std::string name;              // empty on create: generate_name is used
  std::string generate_name;
  std::string uid;
  std::string resource_version;  // on update: makes the PUT conditional
  std::string driver;
  std::string node_name;
  std::string pool_name;
  int64_t generation = 0;
  int64_t resource_slice_count = 0;
  std::vector<OwnerReference> owners;
  SliceContent content;
};

std::string encode_slice(const SliceObject& slice);
// Fails with a message naming the field when the JSON is not a ResourceSlice we can read.
Result<SliceObject> decode_slice(std::string_view json);
// Sorts devices by name (the canonical order used for comparison).
void canonicalize(SliceContent& content);

}  // namespace nvdra::k8s
