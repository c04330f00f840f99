#pragma once
// systemd's D-Bus names (org.freedesktop.systemd1(5)), shared by everything in the agent that talks
// to the host's systemd: the IMEX unit watcher and the MPS transient units.
namespace nvdra::systemd_bus::systemd1 {

inline constexpr const char* kService = "org.freedesktop.systemd1";
inline constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
inline constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
inline constexpr const char* kUnit = "org.freedesktop.systemd1.Unit";
inline constexpr const char* kNoSuchUnit = "org.freedesktop.systemd1.NoSuchUnit";

}  // namespace nvdra::systemd_bus::systemd1
