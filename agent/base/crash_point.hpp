#pragma once
// Named crash points: a test facility, inert in production. When the environment variable
// NVDRA_CRASH_POINT names a point (exactly), the process kills itself with SIGKILL the moment it
// reaches it, so a process test can stop the agent between two durable steps and check that the
// next start finishes or rolls back what was under way. Unset (the normal case) it costs one
// load and a branch per point. Points are named "<area>.<step>", e.g. "checkpoint.after-rename";
// every point placed must be listed in test/process/crash_points.txt, which the crash test runs.
#include <csignal>
#include <cstdlib>
#include <string_view>

#include <unistd.h>

namespace nvdra {

namespace detail {
inline const char* crash_point_armed() {
  static const char* const armed = std::getenv("NVDRA_CRASH_POINT");  // read once; tests set it at exec
  return armed;
}
}  // namespace detail

inline void crash_point(std::string_view name) {
  const char* armed = detail::crash_point_armed();
  if (armed == nullptr || name != armed) return;
  ::kill(::getpid(), SIGKILL);  // SIGKILL as kubelet's or the OOM killer's: no handlers, no flush
  ::_exit(137);                 // not reached; keeps the compiler sure this path ends
}

// "<area>.<step>" where the area is only known at run time (the kind of claim): compared in
// place, so the unarmed case still builds no string.
inline void crash_point(std::string_view area, std::string_view step) {
  const char* armed = detail::crash_point_armed();
  if (armed == nullptr) return;
  const std::string_view a(armed);
  if (a.size() != area.size() + 1 + step.size() || !a.starts_with(area) || a[area.size()] != '.' ||
      !a.ends_with(step))
    return;
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);
}

}  // namespace nvdra
