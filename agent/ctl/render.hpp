#pragma once
// What nvdractl prints for each command: aligned tables for people, JSON (Boost.JSON, the same
// field names as GetStatusJson) for scripts. Pure functions of a snapshot, so tests can pin them.
#include <string>

#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::ctl {

enum class Command { kStatus, kDevices, kClaims, kImex, kFabric };
enum class Format { kTable, kJson };

std::string render(const systemd_bus::StatusSnapshot& s, Command command, Format format);

// "2026-11-22T13:04:05Z" for microseconds since the epoch.
std::string format_time(uint64_t usec);

}  // namespace nvdra::ctl
