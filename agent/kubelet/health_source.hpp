#pragma once
// HealthSource — the seam between the DRA resource-health stream and whatever knows device health
// (NVML events, later). It exposes the current health of every device the driver publishes plus a
// generation that grows with each change; the health service (v1alpha1 and v1) sends kubelet a
// complete report at once, again after every change, and again before kubelet's staleness timeout.
//
// Contract:
//  - io_context thread only.
//  - watch(after) completes with the current snapshot as soon as snapshot().generation > after
//    (at once if that already holds). It supports asio per-operation cancellation (terminal),
//    which is how a stream stops waiting when kubelet goes away or the agent shuts down.
//  - A snapshot lists every published device; a device missing from it goes Unknown in kubelet.
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace nvdra::kubelet {

enum class Health { kUnknown, kHealthy, kUnhealthy };

struct DeviceHealth {
  std::string pool_name;
  std::string device_name;
  Health health = Health::kUnknown;
  int64_t last_updated_unix = 0;     // when the source last determined it (unix seconds)
  int64_t timeout_seconds = 0;       // kubelet's staleness timeout for this device; 0 = its default (30 s)
  std::string message;               // optional detail; cut to 1024 characters on the wire
  bool operator==(const DeviceHealth&) const = default;
};

struct HealthSnapshot {
  uint64_t generation = 0;
  std::vector<DeviceHealth> devices;
};

class HealthSource {
 public:
  virtual ~HealthSource() = default;
  virtual HealthSnapshot snapshot() const = 0;
  virtual boost::asio::awaitable<HealthSnapshot> watch(uint64_t after) = 0;
};

}  // namespace nvdra::kubelet
