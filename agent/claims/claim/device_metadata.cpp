#include "agent/claims/claim/device_metadata.hpp"

#include <boost/json/array.hpp>

namespace nvdra::claims {
namespace json = boost::json;

json::object device_metadata(const PublishedDevice& device) {
  json::object attributes;
  for (const auto& [name, value] : device.attributes) {  // std::map: sorted, as Go marshals a map
    if (const auto* b = std::get_if<bool>(&value)) attributes[name] = json::object{{"bool", *b}};
    else if (const auto* i = std::get_if<int64_t>(&value)) attributes[name] = json::object{{"int", *i}};
    else if (const auto* s = std::get_if<std::string>(&value)) attributes[name] = json::object{{"string", *s}};
    else if (const auto* v = std::get_if<SemVer>(&value)) attributes[name] = json::object{{"version", v->value}};
    else if (const auto* l = std::get_if<std::vector<int64_t>>(&value))
      attributes[name] = json::object{{"ints", json::array(l->begin(), l->end())}};
  }
  return json::object{{"Attributes", std::move(attributes)}, {"NetworkData", nullptr}};
}

std::map<std::string, AttributeValue> metadata_attributes(const json::object& metadata) {
  std::map<std::string, AttributeValue> out;
  const auto* attributes = metadata.if_contains("Attributes");
  if (!attributes || !attributes->is_object()) return out;
  for (const auto& [name, value] : attributes->as_object()) {
    if (!value.is_object()) continue;
    const auto& o = value.as_object();
    if (const auto* b = o.if_contains("bool"); b && b->is_bool()) out.emplace(name, b->as_bool());
    else if (const auto* i = o.if_contains("int"); i && i->is_int64()) out.emplace(name, i->as_int64());
    else if (const auto* s = o.if_contains("string"); s && s->is_string()) out.emplace(name, std::string(s->as_string()));
    else if (const auto* v = o.if_contains("version"); v && v->is_string()) out.emplace(name, SemVer{std::string(v->as_string())});
    else if (const auto* l = o.if_contains("ints"); l && l->is_array()) {
      std::vector<int64_t> list;
      for (const auto& e : l->as_array())
        if (e.is_int64()) list.push_back(e.as_int64());
      out.emplace(name, std::move(list));
    }
  }
  return out;
}

}  // namespace nvdra::claims
