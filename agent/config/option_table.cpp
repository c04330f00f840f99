#include "agent/config/option_table.hpp"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <string_view>

namespace nvdra::config {
namespace {

using Problem = std::optional<std::string>;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

template <class T>
std::optional<T> parse_int(const std::string& s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Problem bad(const std::string& value, const std::string& why) { return "invalid value \"" + value + "\": " + why; }

auto string_field(std::string Options::*field) {
  return [field](Options& o, const std::string& v) -> Problem {
    o.*field = v;
    return std::nullopt;
  };
}

auto abs_path_field(std::string Options::*field, bool allow_empty = false) {
  return [field, allow_empty](Options& o, const std::string& v) -> Problem {
    if (v.empty() && allow_empty) {
      o.*field = v;
      return std::nullopt;
    }
    if (v.empty() || v.front() != '/') return bad(v, "must be an absolute path");
    o.*field = v;
    return std::nullopt;
  };
}

Problem apply_reconnect_spread(Options& o, const std::string& v) {
  try {
    size_t used = 0;
    const double s = std::stod(v, &used);
    if (used != v.size() || !std::isfinite(s) || s < 0 || s > 3600) return bad(v, "must be seconds from 0 to 3600");
    o.api_reconnect_spread = std::chrono::milliseconds(static_cast<long long>(s * 1000));
    return std::nullopt;
  } catch (const std::exception&) {
    return bad(v, "must be seconds from 0 to 3600");
  }
}

auto positive_double_field(double Options::*field) {
  return [field](Options& o, const std::string& v) -> Problem {
    try {
      size_t used = 0;
      const double q = std::stod(v, &used);
      if (used != v.size() || !std::isfinite(q) || q <= 0) return bad(v, "must be a number above 0");
      o.*field = q;
      return std::nullopt;
    } catch (const std::exception&) {
      return bad(v, "must be a number above 0");
    }
  };
}

auto positive_int_field(int Options::*field) {
  return [field](Options& o, const std::string& v) -> Problem {
    auto b = parse_int<int>(v);
    if (!b || *b < 1) return bad(v, "must be a whole number of at least 1");
    o.*field = *b;
    return std::nullopt;
  };
}

auto bool_field(bool Options::*field) {
  return [field](Options& o, const std::string& v) -> Problem {
    auto b = parse_go_bool(v);
    if (!b) return bad(v, "must be true or false");
    o.*field = *b;
    return std::nullopt;
  };
}

Problem apply_drivers(Options& o, const std::string& v) {
  std::set<DriverKind> drivers;
  for (const auto& item : split_commas(v)) {
    if (item == "gpu") drivers.insert(DriverKind::kGpu);
    else if (item == "compute-domain") drivers.insert(DriverKind::kComputeDomain);
    else return bad(v, "unknown driver \"" + item + "\" (allowed: gpu, compute-domain)");
  }
  if (drivers.empty()) return bad(v, "at least one driver is needed (allowed: gpu, compute-domain)");
  o.drivers = drivers;
  return std::nullopt;
}

Problem apply_xids(Options& o, const std::string& v) {
  std::vector<uint32_t> xids;
  for (const auto& item : split_commas(v)) {
    auto x = parse_int<uint32_t>(item);
    if (!x || *x == 0) return bad(v, "\"" + item + "\" is not a positive XID number");
    xids.push_back(*x);
  }
  o.additional_xids_to_ignore = xids;
  return std::nullopt;
}

Problem apply_http_endpoint(Options& o, const std::string& v) {
  if (!v.empty()) {
    const auto colon = v.rfind(':');
    auto port = colon == std::string::npos ? std::nullopt : parse_int<int>(v.substr(colon + 1));
    if (!port || *port < 0 || *port > 65535) return bad(v, "must be [host]:port with a port from 0 to 65535");
  }
  o.http_endpoint = v;
  return std::nullopt;
}

Problem apply_consumable_shares(Options& o, const std::string& v) {
  if (v != "disabled" && v != "memory" && v != "unlimited") {
    auto n = parse_int<long>(v);
    if (!n || *n <= 0)
      return "invalid value for --consumable-shares: \"" + v +
             "\" (must be 'disabled', 'memory', 'unlimited', or a positive integer)";
  }
  o.consumable_shares = v;
  return std::nullopt;
}

// RFC 1123 label: lowercase alphanumerics and '-', starting and ending alphanumeric.
bool is_dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

Problem apply_dns_label(std::string& out, const std::string& v, size_t max_len, bool subdomain) {
  bool ok = !v.empty() && v.size() <= max_len;
  if (ok && subdomain) {
    size_t start = 0;
    while (ok && start <= v.size()) {
      const size_t dot = v.find('.', start);
      ok = is_dns_label(std::string_view(v).substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  } else if (ok) {
    ok = is_dns_label(v);
  }
  if (!ok)
    return bad(v, subdomain ? "must be a DNS-1123 subdomain (lowercase letters, digits, '-', '.'; at most 253)"
                            : "must be a DNS-1123 label (lowercase letters, digits, '-'; at most 63)");
  out = v;
  return std::nullopt;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> kTable = [] {
    std::vector<OptionSpec> t;
    auto add = [&t](OptionSpec s) { t.push_back(std::move(s)); };
    add({"node-name", {}, {"NODE_NAME"}, "Node this agent serves; also the ResourceSlice pool name (required)", false,
         false, false, [](Options& o, const std::string& v) { return apply_dns_label(o.node_name, v, 253, true); }});
    add({"namespace", {}, {"NAMESPACE"}, "Namespace of the driver's own objects", false, false, false,
         [](Options& o, const std::string& v) { return apply_dns_label(o.namespace_name, v, 63, false); }});
    add({"kubeconfig", {}, {"KUBECONFIG"}, "kubeconfig file; empty means in-cluster configuration", false, false,
         false, string_field(&Options::kubeconfig)});
    add({"cdi-root", {}, {"CDI_ROOT"}, "Directory for CDI spec files", false, false, false,
         abs_path_field(&Options::cdi_root)});
    add({"nvidia-driver-root", {"--host_driver-root"}, {"NVIDIA_DRIVER_ROOT", "HOST_DRIVER_ROOT"},
         "Root of the NVIDIA driver installation on the host", false, false, false,
         abs_path_field(&Options::nvidia_driver_root)});
    add({"container-driver-root", {}, {"DRIVER_ROOT_CTR_PATH"},
         "Where the driver root is mounted inside the agent's container", false, false, false,
         abs_path_field(&Options::container_driver_root)});
    add({"nvidia-cdi-hook-path", {}, {"NVIDIA_CDI_HOOK_PATH"}, "Host path of nvidia-cdi-hook used in CDI hooks (default: found on the host, in the GPU Operator's toolkit dir or the driver root)",
         false, false, false, abs_path_field(&Options::nvidia_cdi_hook_path, true)});
    add({"kubelet-registrar-directory-path", {}, {"KUBELET_REGISTRAR_DIRECTORY_PATH"},
         "kubelet's plugin registration directory", false, false, false,
         abs_path_field(&Options::kubelet_registrar_dir)});
    add({"kubelet-plugins-directory-path", {}, {"KUBELET_PLUGINS_DIRECTORY_PATH"},
         "Parent of each driver's data directory and DRA socket", false, false, false,
         abs_path_field(&Options::kubelet_plugins_dir)});
    add({"healthcheck-port", {}, {"HEALTHCHECK_PORT"}, "gRPC health port; -1 off, 0 random", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           auto p = parse_int<int>(v);
           if (!p || *p < -1 || *p > 65535) return bad(v, "must be an integer from -1 to 65535");
           o.healthcheck_port = *p;
           return std::nullopt;
         }});
    add({"http-endpoint", {}, {"HTTP_ENDPOINT"}, "Metrics listen address ([host]:port); empty is off", false, false,
         false, apply_http_endpoint});
    add({"metrics-path", {}, {"METRICS_PATH"}, "HTTP path of the metrics", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           if (!v.empty() && v.front() != '/') return bad(v, "must start with '/' (or be empty to turn metrics off)");
           o.metrics_path = v;
           return std::nullopt;
         }});
    add({"kube-api-qps", {}, {"KUBE_API_QPS"}, "Client-side QPS limit for the Kubernetes API", false, false, false,
         positive_double_field(&Options::kube_api_qps)});
    add({"kube-api-burst", {}, {"KUBE_API_BURST"}, "Client-side burst for the Kubernetes API", false, false, false,
         positive_int_field(&Options::kube_api_burst)});
    add({"api-reconnect-spread", {}, {"NVDRA_API_RECONNECT_SPREAD"},
         "Seconds over which a dropped API watch is resumed (a pause drawn from [0, this)), so that a fleet cut "
         "off together by an API server restart does not return in one instant; default 30; 0: [0.25, 0.5] s "
         "as before",
         false, false, false, apply_reconnect_spread});
    add({"claim-read-qps", {}, {"NVDRA_CLAIM_READ_QPS"},
         "Client-side QPS limit for ResourceClaim reads on kubelet's prepare path (a client of their own, so "
         "pod start-up does not queue behind slice publishing)", false, false, false,
         positive_double_field(&Options::claim_read_qps)});
    add({"claim-read-burst", {}, {"NVDRA_CLAIM_READ_BURST"}, "Client-side burst for ResourceClaim reads", false,
         false, false, positive_int_field(&Options::claim_read_burst)});
    add({"clique-reread-seconds", {}, {"NVDRA_CLIQUE_REREAD_SECONDS"},
         "Compute-domain driver: seconds between re-reads of the node's NVLink clique once known (upstream: 600); "
         "a changed clique moves the ComputeDomainClique watch and the nvidia.com/gpu.clique label", false, false,
         false, positive_int_field(&Options::clique_reread_seconds)});
    add({"additional-xids-to-ignore", {}, {"ADDITIONAL_XIDS_TO_IGNORE"},
         "XIDs tainted with effect None instead of NoSchedule, beside 13,31,43,45,68,109 (needs "
         "NVMLDeviceHealthCheck)", false, false, true, apply_xids});
    add({"device-health-recovery", {}, {"NVDRA_DEVICE_HEALTH_RECOVERY"},
         "When health taints go (needs NVMLDeviceHealthCheck): none (upstream: at restart), reset (a lost GPU "
         "served again) or recovery-action (also when NVML's recovery action for an XID has been carried out)",
         false, false, false, [](Options& o, const std::string& v) -> Problem {
           if (v == "none") o.device_health_recovery = HealthRecovery::kNone;
           else if (v == "reset") o.device_health_recovery = HealthRecovery::kReset;
           else if (v == "recovery-action") o.device_health_recovery = HealthRecovery::kRecoveryAction;
           else return bad(v, "allowed: none, reset, recovery-action");
           return std::nullopt;
         }});
    add({"consumable-shares", {}, {"CONSUMABLE_SHARES"}, "Consumable shares (gate ConsumableShares): disabled, memory, unlimited or a positive share count; "
         "GPU and MIG devices may then be allocated to several claims at once", false, false, false, apply_consumable_shares});
    add({"gpu-clique-label-enabled", {}, {"GPU_CLIQUE_LABEL_ENABLED"}, "Driver-managed IMEX: keep the node label "
         "nvidia.com/gpu.clique=<clique id> (merge patch; removed at shutdown)", true, false, false,
         bool_field(&Options::gpu_clique_label_enabled)});
    add({"imex-mode", {}, {"IMEX_MODE"}, "driverManaged or hostManaged (upstream's mode switch; hostManaged, with gate HostManagedIMEXDaemon, "
         "runs nvdra's host-managed IMEX mode, gate HostManagedIMEX)", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           if (v == "driverManaged") o.imex_mode = ImexMode::kDriverManaged;
           else if (v == "hostManaged") o.imex_mode = ImexMode::kHostManaged;
           else return "unknown imex.mode \"" + v + "\" (allowed: driverManaged, hostManaged)";
           return std::nullopt;
         }});
    add({"imex-isolation", {}, {"IMEX_ISOLATION"}, "IMEX isolation; only \"domain\" is supported", false, false,
         false, [](Options&, const std::string& v) -> Problem {
           if (v.empty() || v == "domain") return std::nullopt;
           if (v == "channel")
             return std::string("imex.isolation=\"channel\" is not supported yet: per-workload IMEX channel "
                                "allocation is not implemented");
           return "unknown imex.isolation \"" + v + "\": must be \"domain\" or \"channel\"";
         }});
    add({"imex-host-socket-path", {}, {"IMEX_HOST_SOCKET_PATH"},
         "Upstream's host IMEX control socket; accepted only at its default: nvdra follows the host's IMEX "
         "daemon through its systemd unit (--imex-unit, --imex-check)", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           if (auto p = abs_path_field(&Options::imex_host_socket_path)(o, v)) return p;
           if (v != Options{}.imex_host_socket_path)
             return "\"" + v + "\" is refused: nvdra does not query nvidia-imex-ctl on a socket, it follows the "
                    "host's IMEX daemon through its systemd unit; use --imex-unit and --imex-check, and leave this "
                    "at " + Options{}.imex_host_socket_path;
           return std::nullopt;
         }});
    for (const char* unused : {"image-name", "image-pull-secrets", "image-pull-policy", "service-account-name"}) {
      std::string env(unused);
      for (auto& c : env) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      add({unused, {}, {env},
           "Ignored: upstream's setting for the MPS Deployments it creates; nvdra runs MPS control daemons itself",
           false, false, false, [](Options&, const std::string&) -> Problem { return std::nullopt; }, true});
    }
    add({"feature-gates", {}, {"FEATURE_GATES"}, "Feature gates, Name=bool,Name=bool", false, true, true,
         [](Options& o, const std::string& v) -> Problem {
           if (auto st = o.gates.set_from_string(v); !st) return st.error().message;
           return std::nullopt;
         }});
    // nvdra's own.
    add({"drivers", {}, {"NVDRA_DRIVERS"}, "Drivers to run: gpu, compute-domain (comma-separated)", false, false,
         true, apply_drivers});
    add({"nvml-library", {}, {"NVDRA_NVML_LIBRARY"}, "Path of libnvidia-ml.so.1 to load", false, false, false,
         abs_path_field(&Options::nvml_library, true)});
    add({"host-root", {}, {"HOST_ROOT"}, "Where the host's /proc, /sys and /dev are read", false, false, false,
         abs_path_field(&Options::host_root)});
    add({"rolling-update-uid", {}, {"POD_UID"}, "Unique socket names so two agents can overlap in an upgrade",
         false, false, false, string_field(&Options::rolling_update_uid)});
    add({"imex-unit", {}, {"NVDRA_IMEX_UNIT"}, "systemd unit of the host's IMEX daemon", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           if (v.empty() || v.find('/') != std::string::npos) return bad(v, "must be a systemd unit name");
           o.imex_unit = v;
           return std::nullopt;
         }});
    add({"imex-check", {}, {"NVDRA_IMEX_CHECK"}, "warn, enforce or off", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           if (v == "warn") o.imex_check = ImexCheck::kWarn;
           else if (v == "enforce") o.imex_check = ImexCheck::kEnforce;
           else if (v == "off") o.imex_check = ImexCheck::kOff;
           else return bad(v, "allowed: warn, enforce, off");
           return std::nullopt;
         }});
    add({"mps-manager", {}, {"NVDRA_MPS_MANAGER"},
         "Who runs MPS control daemons: auto, systemd (transient units) or process (children of the agent)",
         false, false, false, [](Options& o, const std::string& v) -> Problem {
           if (v == "auto") o.mps_manager = MpsManager::kAuto;
           else if (v == "systemd") o.mps_manager = MpsManager::kSystemd;
           else if (v == "process") o.mps_manager = MpsManager::kProcess;
           else return bad(v, "allowed: auto, systemd, process");
           return std::nullopt;
         }});
    add({"controller", {}, {"NVDRA_CONTROLLER"}, "Run the Lease-elected ComputeDomain controller role", true, false,
         false, bool_field(&Options::controller)});
    add({"log-format", {"--logging-format"}, {"NVDRA_LOG_FORMAT", "LOGGING_FORMAT"}, "text or json", false, false,
         false, [](Options& o, const std::string& v) -> Problem {
           if (v == "text") o.log_format = runtime::LogFormat::kText;
           else if (v == "json") o.log_format = runtime::LogFormat::kJson;
           else return bad(v, "allowed: text, json");
           return std::nullopt;
         }});
    add({"log-level", {}, {"NVDRA_LOG_LEVEL"}, "trace, debug, info, warn or error", false, false, false,
         [](Options& o, const std::string& v) -> Problem {
           auto level = runtime::parse_log_level(v);
           if (!level) return bad(v, "allowed: trace, debug, info, warn, error");
           o.log_level = *level;
           o.log_level_set = true;
           return std::nullopt;
         }});
    add({"v", {"-v"}, {"V"}, "klog verbosity (0-10), mapped onto --log-level when that is not given", false, false,
         false, [](Options& o, const std::string& v) -> Problem {
           auto n = parse_int<int>(v);
           if (!n || *n < 0 || *n > 10) return bad(v, "must be a whole number from 0 to 10");
           o.verbosity = *n;
           return std::nullopt;
         }});
    return t;
  }();
  return kTable;
}

}  // namespace nvdra::config
