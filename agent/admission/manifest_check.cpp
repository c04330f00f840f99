// YAML documents → Boost.JSON → simdjson, then a walk that finds claim specs wherever a manifest
// embeds them and hands each to config_check, the webhook's own check.
#include "agent/admission/manifest_check.hpp"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <boost/json.hpp>
#include <charconv>

#include "agent/admission/config_check.hpp"

namespace nvdra::admission {
namespace {

using simdjson::dom::element;

// Go yaml.v2's resolution of plain scalars (what kubectl sends for a RawExtension's YAML).
boost::json::value scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return boost::json::value(text);  // quoted: always a string
  constexpr std::array<std::string_view, 4> kNull = {"", "~", "null", "Null"};
  constexpr std::array<std::string_view, 11> kTrue = {"true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON"};
  constexpr std::array<std::string_view, 11> kFalse = {"false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF"};
  const auto in = [&](const auto& set) { return std::find(set.begin(), set.end(), text) != set.end(); };
  if (in(kNull)) return nullptr;
  if (in(kTrue)) return true;
  if (in(kFalse)) return false;
  const char* end = text.data() + text.size();
  int64_t i = 0;
  if (auto r = std::from_chars(text.data(), end, i); r.ec == std::errc() && r.ptr == end) return i;
  double d = 0;
  const bool numeric_start = !text.empty() && (std::isdigit(static_cast<unsigned char>(text.front())) ||
                                               text.front() == '-' || text.front() == '.' || text.front() == '+');
  if (auto r = std::from_chars(text.data() + (text.front() == '+'), end, d);
      numeric_start && r.ec == std::errc() && r.ptr == end)
    return d;
  return boost::json::value(text);
}

// YAML aliases let a small file name one node many times; expanded, it could be any size.
constexpr std::size_t kMaxValues = 1'000'000;

struct TooManyValues {};
// Deeper than any manifest and than simdjson reads later (1024); a YAML alias inside its own anchor
// ("&b [*b]") is a cycle that would otherwise recurse until the stack ends.
constexpr std::size_t kMaxDepth = 512;
struct TooDeep {};

boost::json::value to_json(const YAML::Node& node, std::size_t& budget, std::size_t depth = 0) {
  if (budget == 0) throw TooManyValues{};
  if (depth > kMaxDepth) throw TooDeep{};
  --budget;
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      boost::json::object out;
      for (const auto& kv : node) out[kv.first.as<std::string>()] = to_json(kv.second, budget, depth + 1);
      return out;
    }
    case YAML::NodeType::Sequence: {
      boost::json::array out;
      for (const auto& item : node) out.push_back(to_json(item, budget, depth + 1));
      return out;
    }
    case YAML::NodeType::Scalar: return scalar(node);
    default: return nullptr;
  }
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

struct Walk {
  const claims::ConfigGates& gates;
  ManifestReport& report;
  std::size_t document;
  std::string object;

  void add(std::string path, std::string message) {
    report.findings.push_back({document, object, std::move(path), std::move(message)});
  }

  void visit(element el, const std::string& path) {
    if (simdjson::dom::array arr; !el.get(arr)) {
      std::size_t i = 0;
      for (auto item : arr) visit(item, path + "[" + std::to_string(i++) + "]");
      return;
    }
    simdjson::dom::object obj;
    if (el.get(obj)) return;
    if (simdjson::dom::object devices; !obj["devices"].get(devices) && !devices["config"].error())
      return check_spec(el, path);
    for (auto field : obj) visit(field.value, join(path, field.key));
  }

  void check_spec(element spec, const std::string& path) {
    std::vector<PlacedConfig> configs;
    // A spec at the document's root has no path of its own: its fields start the path.
    const std::string spec_path = path.empty() ? "." : path;
    if (auto s = collect_configs(spec, spec_path, configs); !s) return add(s.error().field, s.error().message);
    report.configs += configs.size();
    for (auto& c : configs) {
      if (path.empty()) c.path.erase(0, 2);
      if (auto p = check_config(c, gates)) add(p->path, p->message);
    }
  }
};

std::string describe(const boost::json::value& doc) {
  const auto* obj = doc.if_object();
  if (!obj) return "document";
  const auto text = [](const boost::json::value* v) { return v && v->is_string() ? std::string(v->as_string()) : ""; };
  std::string kind = text(obj->if_contains("kind"));
  std::string ns, name;
  if (const auto* meta = obj->if_contains("metadata"); meta && meta->is_object()) {
    ns = text(meta->as_object().if_contains("namespace"));
    name = text(meta->as_object().if_contains("name"));
  }
  std::string out = kind.empty() ? "object" : kind;
  if (!name.empty()) out += " " + (ns.empty() ? name : ns + "/" + name);
  return out;
}


// The stream's documents, split as kubectl splits them (a line that is "---" and blanks ends a
// document), each parsed on its own. Not YAML::LoadAll: yaml-cpp 0.7 loops without end, allocating,
// on a flow collection followed by a comma ("{a: b},\n c"), which the fuzzer found.
std::vector<YAML::Node> load_documents(std::string_view text) {
  std::vector<YAML::Node> docs;
  std::string current;
  auto flush = [&](bool separator) {
    auto doc = YAML::Load(current);
    current.clear();
    // A "---" before any content (comments at most) opens the first document; it ends none.
    if (separator && docs.empty() && doc.IsNull()) return;
    docs.push_back(std::move(doc));
  };
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end == std::string_view::npos ? text.size() : end + 1);
    text.remove_prefix(line.size());
    const auto rest = line.substr(std::min<std::size_t>(3, line.size()));
    if (line.starts_with("---") && rest.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      flush(true);
    } else {
      current.append(line);
    }
  }
  flush(false);
  return docs;
}

}  // namespace

Result<ManifestReport> check_manifests(std::string_view text, const claims::ConfigGates& gates) {
  std::vector<YAML::Node> docs;
  try {
    docs = load_documents(text);
  } catch (const YAML::Exception& e) {
    return Error{ErrorCode::kInvalidArgument, "not YAML or JSON: " + std::string(e.what())};
  }
  ManifestReport report;
  simdjson::dom::parser parser;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (docs[i].IsNull()) continue;  // an empty document ("---" at the end, comments only)
    ++report.documents;
    boost::json::value json;
    try {
      std::size_t budget = kMaxValues;
      json = to_json(docs[i], budget);
    } catch (const TooDeep&) {
      return Error{ErrorCode::kInvalidArgument, "document " + std::to_string(i + 1) + " nests deeper than " +
                                                    std::to_string(kMaxDepth) + " levels (a YAML alias inside its own anchor?)"};
    } catch (const TooManyValues&) {
      return Error{ErrorCode::kInvalidArgument, "document " + std::to_string(i + 1) + " expands to more than " +
                                                    std::to_string(kMaxValues) + " values (YAML aliases?)"};
    } catch (const YAML::Exception& e) {  // a map key that is not a scalar
      return Error{ErrorCode::kInvalidArgument, "document " + std::to_string(i + 1) + ": " + e.what()};
    }
    const auto serialized = boost::json::serialize(json);
    element root;
    if (auto err = parser.parse(serialized).get(root))  // nesting past simdjson's 1024 levels
      return Error{ErrorCode::kInvalidArgument,
                   "document " + std::to_string(i + 1) + ": " + simdjson::error_message(err)};
    Walk{gates, report, i + 1, describe(json)}.visit(root, "");
  }
  return report;
}

}  // namespace nvdra::admission
