#pragma once
// The table of every option nvdra-agent accepts: its flag name (also its key in the YAML file), the
// environment variables that set it, its help text, and how a raw value is checked and stored.
// One table drives the command line, the environment and the file, so the three cannot drift.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/options.hpp"

namespace nvdra::config {

struct OptionSpec {
  std::string name;                  // "kube-api-qps": --kube-api-qps and YAML key kube-api-qps
  std::vector<std::string> aliases;  // further command-line spellings ("-v", "--host_driver-root")
  std::vector<std::string> envs;     // first set one wins
  std::string help;
  bool is_flag = false;      // boolean: `--x` means true; `--x=false` is allowed
  bool accumulate = false;   // file, then env, then flag are all applied in turn (feature gates)
  bool list = false;         // the YAML file may give a sequence; it is joined with ','
  // Checks and stores a raw value; returns what is wrong with it, if anything.
  std::function<std::optional<std::string>(Options&, const std::string&)> apply;
  // Accepted for upstream's manifests but without meaning for nvdra: --help lists it as ignored.
  bool ignored = false;
};

const std::vector<OptionSpec>& option_table();

}  // namespace nvdra::config
