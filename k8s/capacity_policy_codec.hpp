#pragma once
// The consumable-capacity parts of a ResourceSlice device (resource.k8s.io/v1, 1.34+):
// capacity.<name>.requestPolicy and allowMultipleAllocations, plus list-valued attributes
// (`ints`, 1.36+ with DRAListTypeAttributes). Kept apart from slice_codec.cpp, which calls these.
#include <simdjson.h>

#include <boost/json/object.hpp>
#include <map>
#include <optional>
#include <string>

#include "agent/base/device.hpp"

namespace nvdra::k8s {

// {"value": q} or {"value": q, "requestPolicy": {"default": d, "validRange": {"min","max","step"}}}.
boost::json::object encode_capacity(const std::string& value, const CapacityRequestPolicy* policy);
// Reads one capacity entry; false when it is not an object with a string "value".
bool decode_capacity(simdjson::ondemand::value v, std::string& value, std::optional<CapacityRequestPolicy>& policy);

}  // namespace nvdra::k8s
