#pragma once
// The bytes of a ServedFieldsCache entry: the OpenAPI document's path (hash included) and the fields
// it served. A file another process (or an older nvdra) may have left, so reading refuses anything
// that is not exactly this shape.
#include <optional>
#include <string>
#include <string_view>

#include "k8s/server_features.hpp"

namespace nvdra::k8s {

struct ServedFieldsEntry {
  std::string document_path;
  ServedFields fields;
  bool operator==(const ServedFieldsEntry&) const = default;
};

std::string encode_served_fields(const ServedFieldsEntry& entry);
std::optional<ServedFieldsEntry> decode_served_fields(std::string_view json);

}  // namespace nvdra::k8s
