#include "imex/driver_managed.hpp"

#include <array>
#include <charconv>
#include <optional>
#include <vector>

namespace nvdra::imex {

namespace {

// k8s.io/apimachinery version.ParseGeneric: "X.Y" or "X.Y.Z" (leading "v" allowed), numbers only,
// anything after the numbers (a "-rc1" or "+build") ignored.
std::optional<std::array<unsigned, 3>> parse_generic(std::string_view v) {
  if (v.starts_with('v')) v.remove_prefix(1);
  std::array<unsigned, 3> out{0, 0, 0};
  std::size_t parts = 0;
  const char* p = v.data();
  const char* end = v.data() + v.size();
  while (parts < 3) {
    auto [next, ec] = std::from_chars(p, end, out[parts]);
    if (ec != std::errc{} || next == p) return std::nullopt;
    ++parts;
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  if (parts < 2 || (p != end && *p != '-' && *p != '+')) return std::nullopt;
  return out;
}

}  // namespace

Status check_dns_names_driver(std::string_view found) {
  const auto have = parse_generic(found);
  if (!have)
    return make_error(ErrorCode::kFailedPrecondition,
                      "driver version validation failed: invalid driver version format '" + std::string(found) +
                          "' (gate IMEXDaemonsWithDNSNames needs a driver >= " + std::string(kDnsNamesMinDriver) + ")");
  if (*have < *parse_generic(kDnsNamesMinDriver))
    return make_error(ErrorCode::kFailedPrecondition,
                      "driver version validation failed: IMEXDaemonsWithDNSNames feature requires GPU driver version "
                      ">= " + std::string(kDnsNamesMinDriver) + ", but found " + std::string(found));
  return {};
}

std::string daemon_config_template() {
  static const std::vector<std::string_view> kLines = {
      "LOG_LEVEL=4", "LOG_FILE_NAME=", "STATS_FILE_NAME=/var/log/nvidia-imex-stats.log", "LOG_APPEND_TO_LOG=0",
      "LOG_FILE_MAX_SIZE=1024", "LOG_MAX_ROTATE_COUNT=10", "LOG_USE_SYSLOG=0", "DAEMONIZE=0", "BIND_INTERFACE_IP=",
      "SERVER_PORT=50000", "IMEX_NODE_CONFIG_FILE={{ .IMEXDaemonNodesConfigPath }}", "NETWORK_INTERFACE=",
      "IMEX_WAIT_FOR_QUORUM=RECOVERY", "IMEX_ENABLE_AUTH_ENCRYPTION=0", "IMEX_AUTH_ENCRYPTION_MODE=SSL_TLS",
      "IMEX_AUTH_SOURCE=", "IMEX_SERVER_KEY=", "IMEX_SERVER_CERT=", "IMEX_SERVER_CERT_AUTH=", "IMEX_CLIENT_KEY=",
      "IMEX_CLIENT_CERT=", "IMEX_CLIENT_CERT_AUTH=", "IMEX_SECURITY_TARGET_OVERRIDE=", "IMEX_GSS_SERVICE_NAME=host",
      "IMEX_GSS_TIMEOUT_SEC=30", "IMEX_GSS_RETRY_INTERVAL_SEC=5", "IMEX_GSS_SEC_CONTEXT_LIFETIME_SEC=-1",
      "IMEX_GSS_SHUTDOWN_ON_FAILURE=0", "IMEX_CMD_ENABLED=1", "IMEX_CMD_BIND_INTERFACE_IP={{ .IMEXCmdBindInterfaceIP }}",
      "IMEX_CMD_PORT=50005", "IMEX_CMD_UNIX_DOMAIN_PATH=", "IMEX_NODE_DISCONNECTED_GRACE_TIME=-1"};
  std::string out;
  for (auto line : kLines) {
    out += line;
    out += '\n';
  }
  return out;
}

Error label_conflict_error(const std::string& holder, const std::string& wanted) {
  return make_error(ErrorCode::kFailedPrecondition,
                    "error updating node label: label already exists for a different ComputeDomain (node label " +
                        std::string(kDomainLabel) + "=" + holder + ", this claim's ComputeDomain " + wanted + ")");
}

Error not_ready_error(const std::string& where) {
  return make_error(ErrorCode::kUnavailable, "current node not ready in ComputeDomain: " + where);
}

}  // namespace nvdra::imex
