#pragma once
// StatusSnapshot — what the agent tells host tooling about itself, as plain data. The agent fills
// one in and hands it to StatusService::update(); nvdractl decodes the same struct from D-Bus.
// Strings rather than enums where the value is shown to people verbatim (unit states, health).
#include <cstdint>
#include <string>
#include <vector>

#include "agent/systemd_bus/claim_rows.hpp"

namespace nvdra::systemd_bus {

// One DRA driver inside the agent.
struct DriverStatus {
  std::string name;          // "gpu.nvidia.com", "compute-domain.nvidia.com"
  std::string registration;  // kRegistration*: where the kubelet registration stands
  bool published = false;    // ResourceSlices written for this node
  std::string detail;        // the last problem, or "" when fine
  bool operator==(const DriverStatus&) const = default;
};
inline constexpr const char* kRegistrationPending = "pending";
inline constexpr const char* kRegistrationRegistered = "registered";
inline constexpr const char* kRegistrationFailed = "failed";

struct DeviceStatus {
  std::string driver;
  std::string name;    // the published device name, e.g. "gpu-0", "channel-0"
  std::string type;    // gpu | mig | vfio | channel | daemon
  std::string uuid;    // "" where the device has none (channels)
  std::string health;  // kHealth*
  std::string last_xid;       // the last XID NVML reported for it (decimal), "" when none
  std::string last_xid_time;  // when, RFC 3339 UTC, "" when none
  bool operator==(const DeviceStatus&) const = default;
};
// Lower case, as nvdractl shows them. "unknown" unless something measures health (NVMLDeviceHealthCheck):
// never a made-up "healthy".
inline constexpr const char* kHealthHealthy = "healthy";
inline constexpr const char* kHealthUnhealthy = "unhealthy";
inline constexpr const char* kHealthUnknown = "unknown";

// The host's IMEX daemon unit as systemd reports it (HostManagedIMEX), or mode only.
struct ImexStatus {
  std::string mode;          // driverManaged | hostManaged | "" when the compute-domain driver is off
  std::string unit;          // "nvidia-imex.service"
  std::string active_state;  // systemd ActiveState: active, inactive, failed, … ; "" if not watched
  std::string sub_state;     // systemd SubState: running, dead, … ; "" if not watched
  bool operator==(const ImexStatus&) const = default;
};

// NVIDIA Fabric Manager (FabricManagerPartitioning / FabricTopologySupport): where the agent is
// connected, and the NVSwitch partitions it holds active for prepared claims.
struct FabricPartitionStatus {
  uint64_t id = 0;
  std::vector<std::string> modules;  // GPU module ids of the partition
  std::vector<std::string> claims;   // UIDs of the prepared claims holding it
  bool operator==(const FabricPartitionStatus&) const = default;
};
struct FabricStatus {
  std::string manager;  // "unix:/run/nvidia-fabricmanager/socket", "unavailable: <why>", "" (gates off)
  std::vector<FabricPartitionStatus> partitions;
  bool operator==(const FabricStatus&) const = default;
};

struct ErrorRecord {
  uint64_t when_usec = 0;  // CLOCK_REALTIME, microseconds since the epoch
  std::string component;   // the logger name: "kubelet", "claims", "imex", …
  std::string message;
  bool operator==(const ErrorRecord&) const = default;
};

struct StatusSnapshot {
  std::string version;
  std::string node_name;
  bool ready = false;  // READY=1 has been sent
  std::vector<DriverStatus> drivers;
  std::vector<DeviceStatus> devices;
  ClaimRows claims;
  ImexStatus imex;
  FabricStatus fabric;
  std::vector<ErrorRecord> last_errors;  // newest last; the agent keeps at most kMaxErrors
  bool operator==(const StatusSnapshot&) const = default;

  static constexpr size_t kMaxErrors = 32;
};

}  // namespace nvdra::systemd_bus
