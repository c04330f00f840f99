#pragma once
// Which ResourceSlice rules and fields an API server takes, found out rather than guessed:
//  * the version (/version) decides the counter layout and the 64-device cap's inputs;
//  * the server's own OpenAPI v3 document for resource.k8s.io/v1 (/openapi/v3 names it) says
//    whether it serves list-valued attributes (DeviceAttribute.ints, 1.36+) and consumable capacity
//    (Device.allowMultipleAllocations, 1.34+);
//  * a served field can still be cleared on write when the server's feature gate is off
//    (LIMITS.md "Feature-gated fields are silently dropped"): fields_dropped() compares a write
//    with what the server stored, and the publisher stops sending what was dropped.
// Pure functions; SlicePublisher does the I/O.
#include <optional>
#include <string>
#include <string_view>

#include "agent/base/result.hpp"
#include "k8s/api_server.hpp"
#include "k8s/slice_codec.hpp"
#include "k8s/slice_plan.hpp"

namespace nvdra::k8s {

struct ServedFields {
  bool list_attributes = false;       // DeviceAttribute.ints
  bool multiple_allocations = false;  // Device.allowMultipleAllocations (+ DeviceCapacity.requestPolicy)
  bool operator==(const ServedFields&) const = default;
};

// What a server of this version serves when its OpenAPI cannot be read (1.36+: lists).
ServedFields served_fields_by_version(const ServerVersion& version);
// The relative URL of `group_version`'s document in the /openapi/v3 index ({"paths": {"apis/<gv>":
// {"serverRelativeURL": …}}}); an error when the index does not list it.
Result<std::string> openapi_document_path(std::string_view index, std::string_view group_version);
// Reads a resource.k8s.io/v1 OpenAPI v3 document.
Result<ServedFields> served_fields_from_openapi(std::string_view document);

SliceRules rules_for(const ServerVersion& version, const ServedFields& served);

// Fields of `sent` that `stored` lacks although they were written (the server's gate is off).
struct DroppedFields {
  bool list_attributes = false;
  bool multiple_allocations = false;
  bool any() const { return list_attributes || multiple_allocations; }
};
DroppedFields fields_dropped(const SliceContent& sent, const SliceContent& stored);

}  // namespace nvdra::k8s
