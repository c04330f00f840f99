#pragma once
// Device metadata (upstream gate DeviceMetadata, KEP-5304) for one prepared device: a copy of the
// attributes the device is published with, as upstream keeps it in the checkpoint
// (CheckpointedDevice.Metadata, upstream-driver.md §6.1):
//   {"Attributes":{"<name>":{"string"|"int"|"bool"|"version"|"ints":…},…},"NetworkData":null}
// — capitalised keys (Go fields without JSON tags), attributes in Go's map order (sorted), each
// value in resource.k8s.io/v1 DeviceAttribute form. Upstream attaches it to VFIO devices only.
//
// For a prepare step (VFIO): with the gate on, set PreparedEntry::metadata =
// device_metadata(<the PublishedDevice of the allocated device>) before the PrepareCompleted
// commit; encode_prepared_groups writes it, decode_prepared_groups reads it back. Pure.
#include <boost/json/object.hpp>

#include "agent/base/device.hpp"

namespace nvdra::claims {

boost::json::object device_metadata(const PublishedDevice& device);

// The attributes of a Metadata object back in device vocabulary (for nvdractl and tests);
// values of another shape are skipped.
std::map<std::string, AttributeValue> metadata_attributes(const boost::json::object& metadata);

}  // namespace nvdra::claims
