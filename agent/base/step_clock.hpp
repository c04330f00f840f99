#pragma once
// StepClock — where the time of one multi-step operation went, for a debug log line
// ("1.93 ms (lookup 0.41, started 0.52, devices 0.61, completed 0.39)"). Cheap enough to keep on
// the prepare path: a few steady_clock reads per claim.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace nvdra {

class StepClock {
 public:
  void step(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    steps_.emplace_back(name, now - last_);
    last_ = now;
  }
  std::string describe() const {
    std::string parts;
    for (const auto& [name, d] : steps_) parts += fmt::format("{}{} {:.2f}", parts.empty() ? "" : ", ", name, ms(d));
    return fmt::format("{:.2f} ms ({})", ms(last_ - start_), parts);
  }

 private:
  static double ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
  std::vector<std::pair<const char*, std::chrono::steady_clock::duration>> steps_;
};

}  // namespace nvdra
