#include "k8s/server_features.hpp"

#include <simdjson.h>

#include <algorithm>

namespace nvdra::k8s {
namespace od = simdjson::ondemand;

namespace {

Error bad_document(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "OpenAPI document: " + what);
}

bool has_list(const PublishedDevice& d) {
  return std::any_of(d.attributes.begin(), d.attributes.end(),
                     [](const auto& kv) { return std::holds_alternative<std::vector<int64_t>>(kv.second); });
}

bool shares(const PublishedDevice& d) { return d.allow_multiple_allocations || !d.request_policies.empty(); }

}  // namespace

ServedFields served_fields_by_version(const ServerVersion& v) {
  return ServedFields{v.at_least(1, 36), v.at_least(1, 34)};
}

Result<std::string> openapi_document_path(std::string_view index, std::string_view group_version) {
  od::parser parser;
  simdjson::padded_string padded(index);
  od::document doc;
  od::object paths;
  if (parser.iterate(padded).get(doc) || doc.find_field_unordered("paths").get_object().get(paths))
    return bad_document("/openapi/v3 has no \"paths\" object");
  const std::string key = "apis/" + std::string(group_version);
  for (auto f : paths) {
    std::string_view name, url;
    if (f.unescaped_key().get(name) || name != key) continue;
    if (f.value().find_field_unordered("serverRelativeURL").get_string().get(url))
      return bad_document("/openapi/v3 paths[" + key + "] has no serverRelativeURL");
    return std::string(url);
  }
  return make_error(ErrorCode::kNotFound, "/openapi/v3 does not list " + key);
}

Result<ServedFields> served_fields_from_openapi(std::string_view document) {
  od::parser parser;
  simdjson::padded_string padded(document);
  od::document doc;
  od::object schemas;
  if (parser.iterate(padded).get(doc) ||
      doc.find_field_unordered("components").find_field_unordered("schemas").get_object().get(schemas))
    return bad_document("no components.schemas");
  ServedFields out;
  bool saw_device = false, saw_attribute = false;
  // One pass: on-demand values must be read in document order.
  for (auto f : schemas) {
    std::string_view name;
    if (f.unescaped_key().get(name)) return bad_document("unreadable schema name");
    const bool device = name == "io.k8s.api.resource.v1.Device";
    const bool attribute = name == "io.k8s.api.resource.v1.DeviceAttribute";
    if (!device && !attribute) continue;
    od::object props;
    if (f.value().find_field_unordered("properties").get_object().get(props))
      return bad_document(std::string(name) + " has no properties");
    for (auto p : props) {
      std::string_view prop;
      if (p.unescaped_key().get(prop)) return bad_document("unreadable property of " + std::string(name));
      if (device && prop == "allowMultipleAllocations") out.multiple_allocations = true;
      if (attribute && prop == "ints") out.list_attributes = true;
    }
    saw_device |= device;
    saw_attribute |= attribute;
  }
  if (!saw_device || !saw_attribute)
    return bad_document("no io.k8s.api.resource.v1.Device / DeviceAttribute schema (not resource.k8s.io/v1)");
  return out;
}

SliceRules rules_for(const ServerVersion& version, const ServedFields& served) {
  SliceRules r;
  r.layout = layout_for(version.major, version.minor);
  r.list_attributes = served.list_attributes;
  r.multiple_allocations = served.multiple_allocations;
  r.lists_are_advanced = version.at_least(1, 36);
  return r;
}

DroppedFields fields_dropped(const SliceContent& sent, const SliceContent& stored) {
  DroppedFields out;
  for (const auto& d : sent.devices) {
    const auto it = std::find_if(stored.devices.begin(), stored.devices.end(),
                                 [&](const PublishedDevice& s) { return s.name == d.name; });
    if (it == stored.devices.end()) continue;
    if (has_list(d) && !has_list(*it)) out.list_attributes = true;
    if (shares(d) && !shares(*it)) out.multiple_allocations = true;
  }
  return out;
}

}  // namespace nvdra::k8s
