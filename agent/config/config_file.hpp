#pragma once
// The YAML config file (/etc/nvdra/agent.yaml): a mapping from option names (the long flag names
// without dashes) to values. Scalars are taken as written; a sequence becomes a comma-separated
// list; feature-gates may also be a mapping of gate names to booleans.
#include <cstddef>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::config {

struct FileEntry {
  std::string key;
  std::string value;
  int line = 0;  // 1-based, for error messages
  bool is_sequence = false;
};

// Larger files are refused unread (a hostile or mistaken path must not exhaust memory).
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;

// Errors name the file and line: "/etc/nvdra/agent.yaml:4:3: ...".
Result<std::vector<FileEntry>> read_config_file(const std::string& path);
Result<std::vector<FileEntry>> parse_config_text(const std::string& text, const std::string& path_for_errors);

}  // namespace nvdra::config
