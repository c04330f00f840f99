#pragma once
// The metadata fields every cache and matcher needs, read from raw object JSON with simdjson.
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::k8s {

struct ObjectMeta {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  // Cache key: "ns/name", or "name" for cluster-scoped objects.
  std::string key() const { return ns.empty() ? name : ns + "/" + name; }
};

Result<ObjectMeta> read_object_meta(std::string_view json);

}  // namespace nvdra::k8s
