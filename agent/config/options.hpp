#pragma once
// Options — everything nvdra-agent is configured with, after flags, environment and the config file
// have been merged (flag > env > file > default). Upstream flag names and defaults where they apply
// (../shared/reference/upstream-driver.md §8); nvdra's own options after them.
#include <spdlog/common.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/config/feature_gates.hpp"
#include "agent/runtime/logging.hpp"

namespace nvdra::config {

enum class DriverKind { kGpu, kComputeDomain };
inline constexpr const char* kGpuDriverName = "gpu.nvidia.com";
inline constexpr const char* kComputeDomainDriverName = "compute-domain.nvidia.com";
const char* driver_name(DriverKind kind);

enum class ImexCheck { kWarn, kEnforce, kOff };
enum class ImexMode { kDriverManaged, kHostManaged };
// When a device loses its health taints (NVMLDeviceHealthCheck; README "Device health").
enum class HealthRecovery { kNone, kReset, kRecoveryAction };
// Who runs MPS control daemons: auto picks systemd on a systemd host outside a container.
enum class MpsManager { kAuto, kSystemd, kProcess };

struct Options {
  // Upstream kubelet-plugin flags.
  std::string node_name;
  std::string namespace_name = "default";
  std::string kubeconfig;
  std::string cdi_root = "/etc/cdi";
  std::string nvidia_driver_root = "/";
  std::string container_driver_root = "/driver-root";
  std::string nvidia_cdi_hook_path;
  std::string kubelet_registrar_dir = "/var/lib/kubelet/plugins_registry";
  std::string kubelet_plugins_dir = "/var/lib/kubelet/plugins";
  int healthcheck_port = -1;  // -1 off, 0 random
  std::string http_endpoint;
  std::string metrics_path = "/metrics";
  double kube_api_qps = 5;
  int kube_api_burst = 10;
  // After a dropped API connection, the first retry is drawn from [0, this) (ReconnectPacing).
  std::chrono::milliseconds api_reconnect_spread{30000};
  std::vector<uint32_t> additional_xids_to_ignore;
  HealthRecovery device_health_recovery = HealthRecovery::kRecoveryAction;
  std::string consumable_shares = "disabled";
  bool gpu_clique_label_enabled = false;
  ImexMode imex_mode = ImexMode::kDriverManaged;
  std::string imex_host_socket_path = "/etc/nvidia-imex/imex_ctrl.sock";
  // Accepted for drop-in compatibility with upstream manifests; nvdra runs MPS without Deployments.
  std::string image_name;
  FeatureGates gates;
  // Upstream's environment for reaching NVIDIA Fabric Manager (FabricManagerPartitioning):
  // NVIDIA_FABRICMANAGER_ADDRESS set (even empty) → TCP; else the unix socket below.
  std::optional<std::string> fabricmanager_address;
  std::string fabricmanager_unix_socket;  // "" → <driver root>/run/nvidia-fabricmanager/socket

  // nvdra's own.
  std::string config_file;  // the file that was read, empty if none
  std::set<DriverKind> drivers = {DriverKind::kGpu, DriverKind::kComputeDomain};
  std::string nvml_library;
  std::string host_root = "/";
  std::string rolling_update_uid;
  std::string imex_unit = "nvidia-imex.service";
  ImexCheck imex_check = ImexCheck::kWarn;
  bool controller = true;
  MpsManager mps_manager = MpsManager::kAuto;
  // ResourceClaim GETs on kubelet's prepare path: their own client and limits (upstream shares
  // --kube-api-qps 5 with everything, so 64 claims of a node's pods took 13 s just to be read).
  double claim_read_qps = 50;
  int claim_read_burst = 100;
  // How often the compute-domain driver re-reads the node's NVLink clique once it is known (upstream: every
  // 10 minutes); a changed clique moves the clique watch and the nvidia.com/gpu.clique label.
  int clique_reread_seconds = 600;
  runtime::LogFormat log_format = runtime::LogFormat::kText;
  spdlog::level::level_enum log_level = spdlog::level::info;
  bool log_level_set = false;    // --log-level given: it wins over -v
  std::optional<int> verbosity;  // klog -v, mapped onto log_level when --log-level is not given

  bool driver_enabled(DriverKind kind) const { return drivers.count(kind) != 0; }
};

}  // namespace nvdra::config
