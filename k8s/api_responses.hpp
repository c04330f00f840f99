#pragma once
// Readers of the API server's answers that are not objects of a kind: a list (items and the
// list's resourceVersion/continue) and /version. Pure functions, apart from the transport so that
// they can be fuzzed (test/fuzz/targets/list_response.cpp, server_version.cpp).
#include <string_view>

#include "k8s/api_server.hpp"

namespace nvdra::k8s {

// {"metadata":{"resourceVersion","continue"},"items":[{…},…]}: each item's raw JSON. "items": null
// is an empty list; an item that is not an object is a BadResponse error.
ApiResult<ListResult> parse_list_response(std::string_view body);

// {"major":"1","minor":"35+","gitVersion":"v1.35.2"}: leading digits of major/minor; no major is an error.
ApiResult<ServerVersion> parse_version_response(std::string_view body);

}  // namespace nvdra::k8s
