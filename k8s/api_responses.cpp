#include "k8s/api_responses.hpp"

#include <simdjson.h>

#include <cctype>
#include <string>

namespace nvdra::k8s {

namespace od = simdjson::ondemand;

namespace {

int leading_int(std::string_view s) {
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

ApiResult<ListResult> parse_list_response(std::string_view body) {
  od::parser parser;
  simdjson::padded_string padded(body);
  od::document doc;
  ListResult out;
  auto bad = [](const char* what) { return make_local_error(kReasonBadResponse, std::string("list response: ") + what); };
  if (parser.iterate(padded).get(doc)) return bad("not JSON");
  od::object root;
  if (doc.get_object().get(root)) return bad("not an object");
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return bad("unreadable key");
    if (key == "metadata") {
      od::object meta;
      if (field.value().get_object().get(meta)) return bad("metadata is not an object");
      for (auto m : meta) {
        std::string_view mk, mv;
        if (m.unescaped_key().get(mk)) return bad("unreadable metadata key");
        if (mk == "resourceVersion" && !m.value().get_string().get(mv)) out.resource_version = mv;
        if (mk == "continue" && !m.value().get_string().get(mv)) out.continue_token = mv;
      }
    } else if (key == "items") {
      od::array items;
      if (field.value().get_array().get(items)) continue;  // "items": null for an empty list
      for (auto item : items) {
        std::string_view raw;
        od::object obj;
        if (item.get_object().get(obj) || obj.raw_json().get(raw)) return bad("malformed item");
        out.items.emplace_back(raw);
      }
    }
  }
  return out;
}

ApiResult<ServerVersion> parse_version_response(std::string_view body) {
  od::parser parser;
  simdjson::padded_string padded(body);
  od::document doc;
  ServerVersion v;
  od::object root;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(root))
    return make_local_error(kReasonBadResponse, "/version: not a JSON object");
  for (auto field : root) {
    std::string_view key, text;
    if (field.unescaped_key().get(key) || field.value().get_string().get(text)) continue;
    if (key == "major") v.major = leading_int(text);
    if (key == "minor") v.minor = leading_int(text);  // "35+" on some distributions
    if (key == "gitVersion") v.git_version = text;
  }
  if (v.major == 0) return make_local_error(kReasonBadResponse, "/version: no \"major\" field");
  return v;
}

}  // namespace nvdra::k8s
