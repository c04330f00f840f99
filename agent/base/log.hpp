#pragma once
// nvdra::logger(name) — one named spdlog logger per component, sharing the sinks and level that
// agent/runtime/logging set up on the default logger. Safe from any thread.
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>

namespace nvdra {

inline std::shared_ptr<spdlog::logger> logger(const std::string& name) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (auto existing = spdlog::get(name)) return existing;
  auto def = spdlog::default_logger();
  auto made = std::make_shared<spdlog::logger>(name, def->sinks().begin(), def->sinks().end());
  made->set_level(def->level());
  made->flush_on(spdlog::level::warn);
  spdlog::register_logger(made);
  return made;
}

}  // namespace nvdra
