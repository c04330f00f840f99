#pragma once
// metrics::Sink — what the parts of the agent report for the Prometheus page, as events. The leaf
// folders (k8s, nvml, …) and the claim pipeline see only this interface; agent/metrics/Metrics
// implements it with prometheus-cpp and the page is rendered from there. Every method has an empty
// default, so a part takes a `Sink&` (null_sink() when nothing listens) and a test double overrides
// only what it checks.
//
// Contract: implementations are thread-safe and cheap (a counter increment): they are called on
// the io_context thread and on WorkerPool threads (checkpoint fsyncs, MIG changes), never block.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace nvdra::metrics {

class Sink {
 public:
  virtual ~Sink() = default;

  // One Kubernetes API request that finished: verb (get, list, watch, create, update, delete,
  // version), the HTTP status answered, 0 when there was none (connection, TLS, timeout).
  virtual void api_request(std::string_view /*verb*/, int /*http_status*/) {}
  // A watch opened again on a resource after an earlier one on the same client ended.
  virtual void watch_restart(std::string_view /*resource*/) {}
  // A ResourceSlice write (create, update, delete) and whether the server accepted it.
  virtual void slice_write(std::string_view /*op*/, bool /*ok*/) {}
  // The checkpoint file of a driver: a durable save, and every fsync made for one.
  virtual void checkpoint_save(std::string_view /*driver*/) {}
  virtual void checkpoint_fsync(std::string_view /*driver*/) {}
  // DynamicMIG: a MIG device (GPU + compute instance) created or destroyed through NVML.
  virtual void mig_device_created() {}
  virtual void mig_device_destroyed() {}
  // FabricManager: one activate/deactivate call (ok or not) and how long FM took; the number of
  // partitions the agent holds active after a change.
  virtual void fabric_partition_call(std::string_view /*op*/, bool /*ok*/, double /*seconds*/) {}
  virtual void fabric_partitions_active(std::size_t /*count*/) {}
  // Device health (NVMLDeviceHealthCheck): an XID or ECC event on a GPU, GPU_IS_LOST (NVML does
  // not say which GPU), a GPU whose taints went ("reset", "recovery_action"), and the watched
  // devices counted by health after each change.
  virtual void gpu_xid(std::string_view /*gpu*/, uint64_t /*xid*/) {}
  virtual void gpu_ecc(std::string_view /*gpu*/, bool /*double_bit*/) {}
  virtual void gpu_lost() {}
  virtual void health_recovered(std::string_view /*gpu*/, std::string_view /*reason*/) {}
  virtual void devices_by_health(std::size_t /*healthy*/, std::size_t /*unhealthy*/, std::size_t /*unknown*/) {}
};

// A Sink that records nothing: the default wherever no Metrics is wired in (tests, tools).
inline Sink& null_sink() {
  static Sink sink;
  return sink;
}

}  // namespace nvdra::metrics
