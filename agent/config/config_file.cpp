#include "agent/config/config_file.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "agent/base/bounded_read.hpp"

namespace nvdra::config {
namespace {

Error file_error(const std::string& path, const YAML::Mark& mark, const std::string& what) {
  std::string where = path;
  if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  return make_error(ErrorCode::kInvalidArgument, where + ": " + what);
}

}  // namespace

Result<std::vector<FileEntry>> parse_config_text(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for this is "bad file".
    return file_error(path, e.mark, "nested deeper than " + std::to_string(e.depth()) + " levels; an option value is a "
                                    "plain value or a list");
  } catch (const YAML::Exception& e) {
    return file_error(path, e.mark, "invalid YAML: " + e.msg);
  }
  if (root.IsNull()) return std::vector<FileEntry>{};  // an empty file configures nothing
  if (!root.IsMap()) return file_error(path, root.Mark(), "the top level must be a mapping of option names to values");

  std::vector<FileEntry> entries;
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const YAML::Node& key = kv.first;
    const YAML::Node& val = kv.second;
    // An empty key ("": x, or what yaml-cpp makes of a stray quote) names no option either.
    if (!key.IsScalar() || key.Scalar().empty()) return file_error(path, key.Mark(), "keys must be option names");
    FileEntry entry{key.Scalar(), {}, key.Mark().line + 1, false};
    if (!seen.insert(entry.key).second) return file_error(path, key.Mark(), "duplicate key '" + entry.key + "'");
    if (val.IsScalar()) {
      entry.value = val.Scalar();
    } else if (val.IsNull()) {
      entry.value = "";
    } else if (val.IsSequence()) {
      entry.is_sequence = true;
      for (const auto& item : val) {
        if (!item.IsScalar()) return file_error(path, item.Mark(), "'" + entry.key + "' items must be plain values");
        entry.value += (entry.value.empty() ? "" : ",") + item.Scalar();
        // Aliases (*a) repeat an anchored value without repeating its bytes: a small file could
        // otherwise expand into gigabytes here.
        if (entry.value.size() > kMaxConfigFileBytes)
          return file_error(path, item.Mark(), "'" + entry.key + "' expands to more than " +
                                                   std::to_string(kMaxConfigFileBytes >> 10) + " KiB (YAML aliases?)");
      }
    } else if (val.IsMap() && entry.key == "feature-gates") {
      for (const auto& gate : val) {
        if (!gate.first.IsScalar() || !gate.second.IsScalar())
          return file_error(path, gate.first.Mark(), "feature-gates must map gate names to true or false");
        entry.value += (entry.value.empty() ? "" : ",") + gate.first.Scalar() + "=" + gate.second.Scalar();
      }
      entry.is_sequence = true;
    } else {
      return file_error(path, val.Mark(), "'" + entry.key + "' must be a plain value or a list");
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<std::vector<FileEntry>> read_config_file(const std::string& path) {
  auto text = read_bounded(path, kMaxConfigFileBytes, "config file");
  if (!text) return text.error();
  if (text->find('\0') != std::string::npos)
    return make_error(ErrorCode::kInvalidArgument, path + ": config file holds NUL bytes; it is not YAML text");
  return parse_config_text(*text, path);
}

}  // namespace nvdra::config
