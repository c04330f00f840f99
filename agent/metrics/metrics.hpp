#pragma once
// Metrics — the agent's Prometheus registry (prometheus-cpp core: Registry + TextSerializer; its
// civetweb exposer is not used, MetricsServer serves the page on the io_context).
//
// What it holds:
//  * upstream's nvidia_dra_* series (pkg/metrics of the Go plugins): same names, labels, `[ALPHA] `
//    help strings, buckets, and the zero series upstream creates at start;
//  * nvdra_* series for what nvdra adds (checkpoint, API client, slices, DynamicMIG, MPS, IMEX,
//    build info), fed through the metrics::Sink events and the setters below;
//  * at render time, the process_* series read from /proc/self (process_metrics.hpp) and
//    promhttp_metric_handler_* as the Go handler has them.
// Thread-safe (prometheus-cpp families lock; counters are atomic): the Sink events arrive from the
// WorkerPool too. render() runs on the io_context thread; its cost is measured in bench/agent.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/metrics_sink.hpp"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T> class Family;
}  // namespace prometheus

namespace nvdra::metrics {

enum class Operation { kPrepare, kUnprepare };
std::string_view to_string(Operation op);

// nvidia_dra_node_{,un}prepare_errors_total's error_type values (upstream's).
inline constexpr std::string_view kErrorLockAcquire = "lock_acquire";
inline constexpr std::string_view kErrorPrepareDevices = "prepare_devices";
inline constexpr std::string_view kErrorUnprepareDevices = "unprepare_devices";
inline constexpr std::string_view kErrorPublishResources = "publish_resources";

class Metrics final : public Sink {
 public:
  // `drivers`: the enabled drivers' names; their request series exist (at zero) from the start.
  Metrics(std::string node, std::string version, const std::vector<std::string>& drivers);
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One kubelet request for one claim: started, then finished with the error type ("" = success,
  // counted in nvidia_dra_requests_total) and its duration.
  void request_started(std::string_view driver, Operation op);
  void request_finished(std::string_view driver, Operation op, double seconds, std::string_view error_type);
  // From the checkpoint after each claim call: PrepareCompleted devices by type, MPS daemons held.
  // A type seen once stays on the page (0 when none are left).
  void set_prepared_devices(std::string_view driver, const std::map<std::string, int64_t>& by_type);
  void set_mps_daemons(std::string_view driver, int64_t daemons);
  // A failed prepare whose rollback failed too (something of the claim was left behind).
  void rollback_failed(std::string_view driver);
  // Checkpoint entries whose devices cannot be read, kept aside at start-up (their devices left alone).
  void unreadable_claims(std::string_view driver, std::size_t count);
  // The host IMEX unit: systemd's ActiveState, or "unknown" while systemd cannot be asked.
  void set_imex_unit(std::string_view unit, std::string_view active_state);

  void api_request(std::string_view verb, int http_status) override;
  void watch_restart(std::string_view resource) override;
  void slice_write(std::string_view op, bool ok) override;
  void checkpoint_save(std::string_view driver) override;
  void checkpoint_fsync(std::string_view driver) override;
  void mig_device_created() override;
  void mig_device_destroyed() override;
  void fabric_partition_call(std::string_view op, bool ok, double seconds) override;
  void fabric_partitions_active(std::size_t count) override;
  void gpu_xid(std::string_view gpu, uint64_t xid) override;
  void gpu_ecc(std::string_view gpu, bool double_bit) override;
  void gpu_lost() override;
  void health_recovered(std::string_view gpu, std::string_view reason) override;
  void devices_by_health(std::size_t healthy, std::size_t unhealthy, std::size_t unknown) override;

  // The page (text exposition format 0.0.4). The handler counts itself: scrape_started() before,
  // scrape_finished(status) after, as promhttp does.
  std::string render() const;
  void scrape_started();
  void scrape_finished(int http_status);

  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct Families;
  std::string node_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  double start_time_seconds_ = 0;
};

}  // namespace nvdra::metrics
