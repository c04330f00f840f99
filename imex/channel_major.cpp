#include "imex/channel_major.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nvdra::imex {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

constexpr const char* kFix =
    "the host's NVIDIA kernel driver does not register IMEX channels: load an NVIDIA driver with IMEX "
    "support (R550 or newer, nvidia.ko loaded), check `grep nvidia-caps-imex-channels /proc/devices` on the "
    "host, then restart nvdra-agent (channels are discovered only at start)";

}  // namespace

Result<int64_t> parse_channel_major(std::string_view text, const std::string& source) {
  bool in_char = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line == "Character devices:") { in_char = true; continue; }
    if (line == "Block devices:") break;
    if (!in_char || line.empty()) continue;
    const auto sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) continue;
    if (trim(line.substr(sp + 1)) != kChannelDeviceName) continue;
    int64_t major = 0;
    const auto digits = line.substr(0, sp);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), major);
    // MAJOR() is 12 bits: anything else in /proc/devices is not the kernel's.
    if (ec != std::errc{} || ptr != digits.data() + digits.size() || major < 0 || major > 4095)
      return make_error(ErrorCode::kFailedPrecondition,
                        source + ": bad major \"" + std::string(digits) + "\" for " + std::string(kChannelDeviceName));
    return major;
  }
  return make_error(ErrorCode::kNotFound, source + " has no character device " + std::string(kChannelDeviceName));
}

Result<int64_t> read_channel_major(const std::string& host_root) {
  const std::string path = (std::filesystem::path(host_root) / "proc/devices").string();
  std::ifstream in(path);
  if (!in)
    return make_error(ErrorCode::kFailedPrecondition,
                      "cannot read " + path + " (is --host-root right?); " + kFix);
  std::ostringstream content;
  content << in.rdbuf();
  auto major = parse_channel_major(content.str(), path);
  if (!major) {
    Error e = major.error();
    e.code = ErrorCode::kFailedPrecondition;
    e.message += ": " + std::string(kFix);
    return e;
  }
  return major;
}

}  // namespace nvdra::imex
