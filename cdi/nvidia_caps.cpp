#include "cdi/nvidia_caps.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

namespace nvdra::cdi {
namespace {

constexpr std::string_view kCapsDir = "/proc/driver/nvidia/capabilities/";
constexpr std::string_view kMigMinors = "/proc/driver/nvidia-caps/mig-minors";

std::string join_root(const std::string& root, std::string_view path) {
  std::string out = root;
  while (!out.empty() && out.back() == '/') out.pop_back();
  out += path;
  return out;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

template <class Int>
std::optional<Int> to_int(std::string_view s) {
  Int v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Calls fn(line) for every line until it returns false.
template <class Fn>
void for_lines(std::string_view text, Fn fn) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    if (!fn(line)) return;
    if (nl == std::string_view::npos) return;
    text.remove_prefix(nl + 1);
  }
}

// Linux device numbers: MAJOR() is 12 bits, MINOR() 20 (MINORBITS). A number outside them in
// /proc is not the kernel's and would only give a CDI spec naming a device that cannot exist.
constexpr int64_t kMaxMajor = (int64_t{1} << 12) - 1;
constexpr int64_t kMaxMinor = (int64_t{1} << 20) - 1;

}  // namespace

Result<int64_t> parse_char_device_major(std::string_view proc_devices, std::string_view name) {
  bool in_char = false;
  std::optional<int64_t> found;
  for_lines(proc_devices, [&](std::string_view line) {
    line = trim(line);
    if (line == "Character devices:") { in_char = true; return true; }
    if (line == "Block devices:") return false;
    if (!in_char) return true;
    auto sp = line.find(' ');
    if (sp == std::string_view::npos || trim(line.substr(sp + 1)) != name) return true;
    found = to_int<int64_t>(line.substr(0, sp));
    if (found && (*found < 0 || *found > kMaxMajor)) found.reset();
    return !found;
  });
  if (!found)
    return make_error(ErrorCode::kFailedPrecondition,
                      "no character device \"" + std::string(name) + "\" in /proc/devices (is the driver loaded?)");
  return *found;
}

Result<int64_t> read_char_device_major(const std::string& host_root, std::string_view name) {
  auto path = join_root(host_root, "/proc/devices");
  auto text = read_text(path);
  if (!text) return make_error(ErrorCode::kFailedPrecondition, "cannot read " + path);
  auto major = parse_char_device_major(*text, name);
  if (!major) return make_error(major.error().code, major.error().message + " [" + path + "]");
  return major;
}

Result<CapNode> parse_cap_access(std::string_view text, std::string_view source) {
  std::optional<int64_t> minor;
  std::optional<uint32_t> mode;
  for_lines(text, [&](std::string_view line) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return true;
    auto key = trim(line.substr(0, colon));
    auto value = trim(line.substr(colon + 1));
    if (key == "DeviceFileMinor") minor = to_int<int64_t>(value);
    if (key == "DeviceFileMode") mode = to_int<uint32_t>(value);
    return true;
  });
  if (!minor || *minor < 0 || *minor > kMaxMinor)
    return make_error(ErrorCode::kFailedPrecondition,
                      std::string(source) + ": no valid \"DeviceFileMinor: <n>\" line");
  return CapNode{*minor, mode};
}

Result<CapNode> read_cap(const std::string& host_root, std::string_view cap) {
  auto path = join_root(host_root, std::string(kCapsDir) + std::string(cap));
  if (auto text = read_text(path)) return parse_cap_access(*text, path);
  // mig-minors names MIG caps without the "mig/" level: "gpu0/gi1/ci0/access 67".
  std::string key(cap);
  if (auto pos = key.find("/mig/"); pos != std::string::npos) key.erase(pos, 4);
  auto table_path = join_root(host_root, kMigMinors);
  std::optional<int64_t> minor;
  if (auto table = read_text(table_path)) {
    for_lines(*table, [&](std::string_view line) {
      line = trim(line);
      auto sp = line.rfind(' ');
      if (sp != std::string_view::npos && trim(line.substr(0, sp)) == key) minor = to_int<int64_t>(line.substr(sp + 1));
      return !minor;
    });
  }
  if (!minor)
    return make_error(ErrorCode::kFailedPrecondition,
                      "nvidia-caps capability \"" + std::string(cap) + "\" not found: looked in " + path + " and " +
                          table_path + " (does the MIG device exist?)");
  return CapNode{*minor, std::nullopt};
}

std::string mig_gi_cap(unsigned parent_minor, unsigned gi_id) {
  return "gpu" + std::to_string(parent_minor) + "/mig/gi" + std::to_string(gi_id) + "/access";
}

std::string mig_ci_cap(unsigned parent_minor, unsigned gi_id, unsigned ci_id) {
  return "gpu" + std::to_string(parent_minor) + "/mig/gi" + std::to_string(gi_id) + "/ci" + std::to_string(ci_id) +
         "/access";
}

}  // namespace nvdra::cdi
