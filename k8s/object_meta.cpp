#include "k8s/object_meta.hpp"

#include <simdjson.h>

namespace nvdra::k8s {

Result<ObjectMeta> read_object_meta(std::string_view json) {
  namespace od = simdjson::ondemand;
  od::parser parser;
  simdjson::padded_string padded(json);
  od::document doc;
  od::object meta;
  ObjectMeta out;
  if (parser.iterate(padded).get(doc) || doc.find_field_unordered("metadata").get_object().get(meta)) {
    return make_error(ErrorCode::kInvalidArgument, "object has no readable metadata");
  }
  for (auto field : meta) {
    std::string_view key, text;
    if (field.unescaped_key().get(key)) break;
    std::string* target = key == "name" ? &out.name
                          : key == "namespace" ? &out.ns
                          : key == "uid" ? &out.uid
                          : key == "resourceVersion" ? &out.resource_version
                          : nullptr;
    if (target != nullptr && !field.value().get_string().get(text)) target->assign(text);
  }
  if (out.name.empty()) return make_error(ErrorCode::kInvalidArgument, "object has no metadata.name");
  return out;
}

}  // namespace nvdra::k8s
