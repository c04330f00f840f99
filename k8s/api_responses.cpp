#include "k8s/api_responses.hpp"

#include <simdjson.h>

#include <cctype>
#include <optional>
#include <string>

namespace nvdra::k8s {

namespace od = simdjson::ondemand;

namespace {

// The leading digits of "35", "35+"; std::nullopt past kMaxVersionPart, which no version reaches
// (found by fuzzing: "21111111111…+" overflowed an int).
constexpr int kMaxVersionPart = 1000000;
std::optional<int> leading_int(std::string_view s) {
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    v = v * 10 + (c - '0');
    if (v > kMaxVersionPart) return std::nullopt;
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
  // On-demand parsing checks only what it reads: an item's raw_json() skips its inside unchecked
  // (found by fuzzing: {"items":[{"metadata":{"nae"}"a":m}]} came out as an item). Validate the
  // whole body first; the items then keep their exact bytes.
  {
    simdjson::dom::parser validator;
    simdjson::dom::element whole;
    if (validator.parse(padded).get(whole)) return bad("not JSON");
  }
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
    if (key != "major" && key != "minor") {
      if (key == "gitVersion") v.git_version = text;
      continue;
    }
    const auto n = leading_int(text);  // "35+" on some distributions
    if (!n)
      return make_local_error(kReasonBadResponse, "/version: \"" + std::string(key) + "\" is not a version number: \"" +
                                                      std::string(text.substr(0, 40)) + "\"");
    (key == "major" ? v.major : v.minor) = *n;
  }
  if (v.major == 0) return make_local_error(kReasonBadResponse, "/version: no \"major\" field");
  return v;
}

}  // namespace nvdra::k8s
