#pragma once
// The IMEX channel character-device major: the "nvidia-caps-imex-channels" line of the host's
// /proc/devices (upstream internal/common/nvcaps.go GetDeviceMajor). The seed (§11) reads it once
// at start; a host without it cannot serve channel claims, so the driver does not start and the
// error says what the host lacks and how to fix it. Blocking file read: call on the worker pool.
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::imex {

inline constexpr std::string_view kChannelDeviceName = "nvidia-caps-imex-channels";

// The first "<major> <name>" line between "Character devices:" and "Block devices:". kNotFound
// when the name is absent; `source` names the file in messages.
Result<int64_t> parse_channel_major(std::string_view proc_devices, const std::string& source);

// Reads <host_root>/proc/devices. Errors (missing file, missing entry) are kFailedPrecondition
// and tell the operator what to fix: load the NVIDIA driver with IMEX channel support, then
// restart the agent (channels are not discovered after start, seed §11).
Result<int64_t> read_channel_major(const std::string& host_root);

}  // namespace nvdra::imex
