#include "k8s/served_fields_codec.hpp"

#include <boost/json.hpp>
#include <simdjson.h>

namespace nvdra::k8s {


std::string encode_served_fields(const ServedFieldsEntry& entry) {
  boost::json::object o;
  o["documentPath"] = entry.document_path;
  o["listAttributes"] = entry.fields.list_attributes;
  o["multipleAllocations"] = entry.fields.multiple_allocations;
  return boost::json::serialize(o);
}

std::optional<ServedFieldsEntry> decode_served_fields(std::string_view json) {
  // The DOM parser: the whole text must be one valid JSON value, not only its first fields.
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  if (parser.parse(json.data(), json.size()).get_object().get(o) || o.size() != 3) return std::nullopt;
  ServedFieldsEntry out;
  std::string_view path;
  if (o["documentPath"].get_string().get(path) || path.empty()) return std::nullopt;
  out.document_path = std::string(path);
  if (o["listAttributes"].get_bool().get(out.fields.list_attributes)) return std::nullopt;
  if (o["multipleAllocations"].get_bool().get(out.fields.multiple_allocations)) return std::nullopt;
  return out;
}

}  // namespace nvdra::k8s
