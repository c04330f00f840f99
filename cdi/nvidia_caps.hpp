#pragma once
// Reads the host's character-device facts that device edits need: majors from /proc/devices and
// nvidia-caps minors/modes from /proc/driver/nvidia/capabilities/<cap> ("DeviceFileMinor: N",
// "DeviceFileMode: M" lines, as upstream internal/common/nvcaps.go), falling back to the driver's
// /proc/driver/nvidia-caps/mig-minors table ("gpu0/gi1/access 66") for MIG caps. All paths are
// under host_root ("/" on the host, --host-root in a container). Blocking file reads; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::cdi {

inline constexpr std::string_view kNvidiaCapsDevice = "nvidia-caps";
inline constexpr std::string_view kImexChannelsDevice = "nvidia-caps-imex-channels";

struct CapNode {
  int64_t minor = 0;
  std::optional<uint32_t> mode;  // DeviceFileMode, when the source gives one
  bool operator==(const CapNode&) const = default;
};

// The first "<major> <name>" line between "Character devices:" and "Block devices:".
Result<int64_t> parse_char_device_major(std::string_view proc_devices, std::string_view name);
Result<int64_t> read_char_device_major(const std::string& host_root, std::string_view name);

// One capabilities access file's content.
Result<CapNode> parse_cap_access(std::string_view text, std::string_view source);

// cap: the path below capabilities/, e.g. "gpu0/mig/gi1/access", "gpu0/mig/gi1/ci0/access",
// "fabric-imex-mgmt".
Result<CapNode> read_cap(const std::string& host_root, std::string_view cap);

std::string mig_gi_cap(unsigned parent_minor, unsigned gi_id);
std::string mig_ci_cap(unsigned parent_minor, unsigned gi_id, unsigned ci_id);

}  // namespace nvdra::cdi
