#include "agent/config/loader.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "agent/config/config_file.hpp"
#include "agent/config/gate_limits.hpp"
#include "agent/config/option_dump.hpp"
#include "agent/config/option_table.hpp"

#ifndef NVDRA_VERSION
#error "NVDRA_VERSION must be defined by the build"
#endif

namespace nvdra::config {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

std::string help_with_env(const OptionSpec& spec) {
  std::string help = spec.help;
  if (!spec.envs.empty()) {
    help += " [env ";
    for (size_t i = 0; i < spec.envs.size(); ++i) help += (i ? ", " : "") + spec.envs[i];
    help += "]";
  }
  return help;
}

struct EnvHit {
  std::string name;
  std::string value;
};

std::optional<EnvHit> env_for(const OptionSpec& spec, const EnvLookup& env) {
  for (const auto& name : spec.envs)
    if (const char* v = env(name.c_str())) return EnvHit{name, v};
  return std::nullopt;
}

// Resolves which config file to read: --config, then NVDRA_CONFIG, then the default if present.
Result<std::string> config_path(const std::string& flag_value, const EnvLookup& env, const std::string& fallback) {
  if (!flag_value.empty()) return flag_value;
  if (const char* v = env("NVDRA_CONFIG"); v != nullptr && *v != '\0') return std::string(v);
  std::error_code ec;
  if (!fallback.empty() && std::filesystem::exists(fallback, ec)) return fallback;
  return std::string();
}

Status cross_validate(Invocation& inv, std::vector<std::string>& notes) {
  Options& o = inv.options;
  if (inv.action == Invocation::Action::kRun && o.node_name.empty())
    return invalid("--node-name (env NODE_NAME) is required: the name of the Kubernetes node this agent serves");
  if (o.imex_mode == ImexMode::kHostManaged) {
    if (!o.gates.enabled(gate::kHostManagedIMEXDaemon))
      return invalid("--imex-mode: imex.mode=\"hostManaged\" requires the HostManagedIMEXDaemon feature gate to be enabled");
    // Upstream's spelling of host-managed IMEX (README "ComputeDomains: host-managed IMEX only").
    if (o.gates.explicit_value(gate::kHostManagedIMEX) == false)
      return invalid("--imex-mode: imex.mode=\"hostManaged\" is nvdra's host-managed IMEX mode, which feature gate "
                     "HostManagedIMEX=false turns off; remove HostManagedIMEX=false");
    if (!o.gates.enabled(gate::kHostManagedIMEX)) {
      (void)o.gates.set(gate::kHostManagedIMEX, true);
      notes.push_back("imex.mode=hostManaged with HostManagedIMEXDaemon: running nvdra's host-managed IMEX mode "
                      "(HostManagedIMEX=true)");
    }
  }
  // Refusals first: a refused gate is named even where upstream's dependency rules would also object.
  if (auto refused = refused_gate(o.gates)) return invalid("--feature-gates: " + *refused);
  auto overrides = o.gates.resolve();
  if (!overrides) return invalid("--feature-gates: " + overrides.error().message);
  for (auto& line : *overrides) notes.push_back(std::move(line));
  if (!o.additional_xids_to_ignore.empty() && !o.gates.enabled(gate::kNVMLDeviceHealthCheck))
    return invalid("--additional-xids-to-ignore requires feature gate NVMLDeviceHealthCheck to be enabled (without "
                   "it no XID is watched)");
  if (o.device_health_recovery != HealthRecovery::kRecoveryAction && !o.gates.enabled(gate::kNVMLDeviceHealthCheck))
    return invalid("--device-health-recovery requires feature gate NVMLDeviceHealthCheck to be enabled (without it "
                   "no device is tainted)");
  if (o.gpu_clique_label_enabled && o.gates.enabled(gate::kHostManagedIMEX))
    return invalid("--gpu-clique-label-enabled: true is refused with HostManagedIMEX: the label is kept in "
                   "driver-managed mode only (`nvdra-agent devices -o json` shows the clique as cliqueId); leave it "
                   "false");
  if (o.consumable_shares != "disabled" && !o.gates.enabled(gate::kConsumableShares))
    return invalid("--consumable-shares requires feature gate ConsumableShares to be enabled");
  if (o.verbosity && !o.log_level_set) {
    // klog levels: 0-3 are operational, 4-5 debug, 6+ per-request tracing.
    o.log_level = *o.verbosity >= 6 ? spdlog::level::trace
                  : *o.verbosity >= 4 ? spdlog::level::debug
                                      : spdlog::level::info;
  }
  return {};
}

}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Result<Invocation> load_invocation(const std::vector<std::string>& args, const EnvLookup& env,
                                   const std::string& default_config_file) {
  Invocation inv;
  CLI::App app{"nvdra-agent: the node side of Kubernetes DRA for NVIDIA GPUs (gpu.nvidia.com, "
               "compute-domain.nvidia.com)",
               "nvdra-agent"};
  app.set_version_flag("--version", std::string("nvdra-agent ") + NVDRA_VERSION);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  const auto& table = option_table();
  std::map<std::string, std::string> raw;
  std::map<std::string, CLI::Option*> cli;
  for (const auto& spec : table) {
    std::string names = "--" + spec.name;
    for (const auto& alias : spec.aliases) names += "," + alias;
    cli[spec.name] = spec.is_flag ? app.add_flag(names + "{true}", raw[spec.name], help_with_env(spec))
                                  : app.add_option(names, raw[spec.name], help_with_env(spec));
    if (spec.ignored) cli[spec.name]->group("Ignored (upstream deployment settings with no meaning for nvdra)");
  }
  bool dump_options = false;
  app.add_flag("--dump-options-json", dump_options, "Print every option and feature gate as JSON (for tests)")
      ->group("");  // hidden
  std::string config_flag;
  app.add_option("--config", config_flag, "YAML config file (default /etc/nvdra/agent.yaml when present) [env NVDRA_CONFIG]");
  auto* devices = app.add_subcommand("devices", "Print the GPUs and MIG devices NVML reports, then exit");
  devices->fallthrough();
  devices->add_option("-o,--output", inv.devices_output_format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));

  // Go's flag package reads `--x=` as the empty value (upstream: `--metrics-path=` turns metrics
  // off); CLI11 calls it a missing value, so it is passed on as `--x ""`.
  std::vector<std::string> expanded;
  for (const auto& a : args) {
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.find('=') == a.size() - 1) {
      expanded.push_back(a.substr(0, a.size() - 1));
      expanded.emplace_back();
    } else {
      expanded.push_back(a);
    }
  }
  std::vector<const char*> argv;
  argv.push_back("nvdra-agent");
  for (const auto& a : expanded) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    inv.action = Invocation::Action::kPrintAndExit;
    inv.output = app.help();
    return inv;
  } catch (const CLI::CallForAllHelp&) {
    inv.action = Invocation::Action::kPrintAndExit;
    inv.output = app.help("", CLI::AppFormatMode::All);
    return inv;
  } catch (const CLI::CallForVersion&) {
    inv.action = Invocation::Action::kPrintAndExit;
    inv.output = std::string("nvdra-agent ") + NVDRA_VERSION + "\n";
    return inv;
  } catch (const CLI::ParseError& e) {
    return invalid(e.what());
  }
  if (dump_options) {
    inv.action = Invocation::Action::kPrintAndExit;
    inv.output = options_json();
    return inv;
  }
  if (devices->parsed()) inv.action = Invocation::Action::kDevices;

  // The config file: every key must be an option name.
  auto path = config_path(config_flag, env, default_config_file);
  if (!path) return path.error();
  std::map<std::string, FileEntry> file;
  if (!path->empty()) {
    auto entries = read_config_file(*path);
    if (!entries) return entries.error();
    for (auto& e : *entries) {
      const bool known = std::any_of(table.begin(), table.end(), [&](const auto& s) { return s.name == e.key; });
      if (!known)
        return invalid(*path + ":" + std::to_string(e.line) + ": unknown key '" + e.key +
                       "' (keys are the long option names, such as node-name; see --help)");
      file[e.key] = e;
    }
    inv.options.config_file = *path;
  }

  for (const auto& spec : table) {
    Options& o = inv.options;
    auto from_file = [&]() -> Status {
      auto it = file.find(spec.name);
      if (it == file.end()) return {};
      if (it->second.is_sequence && !spec.list)
        return invalid(*path + ":" + std::to_string(it->second.line) + ": " + spec.name + ": must be a single value");
      if (auto p = spec.apply(o, it->second.value))
        return invalid(*path + ":" + std::to_string(it->second.line) + ": " + spec.name + ": " + *p);
      return {};
    };
    auto from_env = [&](const EnvHit& hit) -> Status {
      if (auto p = spec.apply(o, hit.value)) return invalid("environment variable " + hit.name + ": " + *p);
      return {};
    };
    auto from_flag = [&]() -> Status {
      if (auto p = spec.apply(o, raw[spec.name])) return invalid("--" + spec.name + ": " + *p);
      return {};
    };
    const bool flag_given = cli[spec.name]->count() > 0;
    const auto env_hit = env_for(spec, env);
    Status st;
    if (spec.accumulate) {
      if (st = from_file(); !st) return st.error();
      if (spec.name == "feature-gates") {
        // Seed README: FABRIC_TOPOLOGY_SUPPORT=true in the environment enables the gate.
        if (const char* v = env("FABRIC_TOPOLOGY_SUPPORT")) {
          auto b = parse_go_bool(v);
          if (!b) return invalid(std::string("environment variable FABRIC_TOPOLOGY_SUPPORT: invalid value \"") + v +
                                 "\": must be true or false");
          (void)o.gates.set(gate::kFabricTopologySupport, *b);
        }
      }
      if (env_hit && (st = from_env(*env_hit), !st)) return st.error();
      if (flag_given && (st = from_flag(), !st)) return st.error();
    } else if (flag_given) {
      st = from_flag();
    } else if (env_hit) {
      st = from_env(*env_hit);
    } else {
      st = from_file();
    }
    if (!st) return st.error();
  }

  // Upstream's FabricManager endpoint (gpu-kubelet-plugin main.go reads them from the environment only).
  if (const char* v = env("NVIDIA_FABRICMANAGER_ADDRESS")) inv.options.fabricmanager_address = std::string(v);
  if (const char* v = env("NVIDIA_FABRICMANAGER_UNIX_SOCKET")) inv.options.fabricmanager_unix_socket = v;

  if (auto st = cross_validate(inv, inv.log_notes); !st) return st.error();
  return inv;
}

}  // namespace nvdra::config
