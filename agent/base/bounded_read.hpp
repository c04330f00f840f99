#pragma once
// Reads a whole (configuration) file, refusing it once it passes `max_bytes`: a hostile or mistaken
// path (/dev/zero, a log file, a multi-gigabyte YAML) ends in one clear error instead of unbounded
// memory or a read that never ends.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "agent/base/result.hpp"

namespace nvdra {

inline Result<std::string> read_bounded(const std::string& path, std::size_t max_bytes, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kInvalidArgument, path + ": cannot read " + what + ": " + std::strerror(errno));
  std::string out;
  char buf[64 * 1024];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes) {
      return make_error(ErrorCode::kInvalidArgument, path + ": " + what + " is larger than " +
                                                         std::to_string(max_bytes >> 10) + " KiB; refusing to read it");
    }
  }
  if (in.bad()) return make_error(ErrorCode::kInvalidArgument, path + ": cannot read " + what + ": " + std::strerror(errno));
  return out;
}

}  // namespace nvdra
