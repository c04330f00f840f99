#pragma once
// Loads Options from argv, the environment and the YAML config file.
//
// Every failure is one line that names where the bad value came from — the flag, the environment
// variable, or the file and line — and what was wrong; the caller prints it and exits 2.
#include <functional>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/config/options.hpp"

namespace nvdra::config {

// Reads one environment variable; returns nullptr when unset. Tests pass a map.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_env();

struct Invocation {
  enum class Action { kRun, kDevices, kPrintAndExit };
  Action action = Action::kRun;
  Options options;
  std::string output;                  // for kPrintAndExit: --help / --version text
  std::vector<std::string> log_notes;  // lines to log once logging is set up (gate overrides, …)
  std::string devices_output_format = "table";  // `devices -o table|json`
};

inline constexpr const char* kDefaultConfigFile = "/etc/nvdra/agent.yaml";

Result<Invocation> load_invocation(const std::vector<std::string>& args, const EnvLookup& env,
                                   const std::string& default_config_file = kDefaultConfigFile);

}  // namespace nvdra::config
