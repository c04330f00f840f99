#include "agent/metrics/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

#include "agent/metrics/process_metrics.hpp"

namespace nvdra::metrics {

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Upstream's request-duration buckets: prometheus.ExponentialBuckets(0.05, 2, 9).
const Histogram::BucketBoundaries kDurationBuckets{0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8};

// k8s component-base prefixes the help of ALPHA metrics; upstream's are all ALPHA.
std::string alpha(const char* help) { return std::string("[ALPHA] ") + help; }

// The systemd ActiveState values (plus "unknown"), one series each: a state set.
constexpr std::string_view kUnitStates[] = {"active", "reloading", "inactive", "failed", "activating", "deactivating",
                                            "unknown"};

template <class T>
Family<T>& build(prometheus::Registry& r, const std::string& name, const std::string& help) {
  if constexpr (std::is_same_v<T, Counter>) return prometheus::BuildCounter().Name(name).Help(help).Register(r);
  else if constexpr (std::is_same_v<T, Gauge>) return prometheus::BuildGauge().Name(name).Help(help).Register(r);
  else return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

std::string s(std::string_view v) { return std::string(v); }

}  // namespace

std::string_view to_string(Operation op) { return op == Operation::kPrepare ? "prepare" : "unprepare"; }

struct Metrics::Families {
  explicit Families(prometheus::Registry& r)
      : requests(build<Counter>(r, "nvidia_dra_requests_total",
                                alpha("Total number of DRA prepare and unprepare requests."))),
        duration(build<Histogram>(r, "nvidia_dra_request_duration_seconds",
                                  alpha("Duration of DRA prepare and unprepare requests."))),
        inflight(build<Gauge>(r, "nvidia_dra_requests_inflight",
                              alpha("Number of in-flight DRA prepare and unprepare requests."))),
        prepared(build<Gauge>(r, "nvidia_dra_prepared_devices",
                              alpha("Current number of prepared devices by device type."))),
        prepare_errors(build<Counter>(r, "nvidia_dra_node_prepare_errors_total",
                                      alpha("Total number of failures during DRA node prepare for kubelet plugins."))),
        unprepare_errors(build<Counter>(
            r, "nvidia_dra_node_unprepare_errors_total",
            alpha("Total number of failures during DRA node unprepare for kubelet plugins."))),
        api_requests(build<Counter>(r, "nvdra_api_requests_total",
                                    "Kubernetes API requests by verb and HTTP status code (\"<error>\": no answer).")),
        watch_restarts(build<Counter>(r, "nvdra_api_watch_restarts_total",
                                      "Kubernetes API watches opened again after the previous one ended, by resource.")),
        slice_writes(build<Counter>(r, "nvdra_resource_slice_writes_total",
                                    "ResourceSlice writes by operation and result.")),
        checkpoint_saves(build<Counter>(r, "nvdra_checkpoint_saves_total",
                                        "Durable saves of a driver's checkpoint file.")),
        checkpoint_fsyncs(build<Counter>(r, "nvdra_checkpoint_fsyncs_total",
                                         "fsync calls made while saving a driver's checkpoint file.")),
        mig_created(build<Counter>(r, "nvdra_mig_devices_created_total",
                                   "MIG devices created by DynamicMIG.")),
        mig_destroyed(build<Counter>(r, "nvdra_mig_devices_destroyed_total",
                                     "MIG devices destroyed by DynamicMIG.")),
        fabric_calls(build<Counter>(r, "nvdra_fabric_partition_calls_total",
                                    "Fabric Manager partition activations and deactivations, by operation and result.")),
        fabric_seconds(build<Histogram>(r, "nvdra_fabric_partition_call_duration_seconds",
                                        "How long Fabric Manager took to activate or deactivate a partition.")),
        fabric_active(build<Gauge>(r, "nvdra_fabric_partitions_active",
                                   "Fabric Manager partitions the agent holds active for prepared claims.")),
        gpu_xids(build<Counter>(r, "nvdra_gpu_xid_events_total",
                                "XID events NVML reported (NVMLDeviceHealthCheck), by GPU UUID and XID.")),
        gpu_ecc(build<Counter>(r, "nvdra_gpu_ecc_events_total",
                               "ECC error events NVML reported, by GPU UUID and type (single_bit, double_bit).")),
        gpu_lost(build<Counter>(r, "nvdra_gpu_lost_events_total",
                                "Times NVML answered GPU_IS_LOST after the GPUs had been served.")),
        health_recoveries(build<Counter>(r, "nvdra_device_health_recoveries_total",
                                         "GPUs whose health taints were removed, by GPU UUID and reason (reset, "
                                         "recovery_action).")),
        devices_by_health(build<Gauge>(r, "nvdra_devices",
                                       "Devices gpu.nvidia.com watches, by health (healthy, unhealthy, unknown).")),
        rollback_failures(build<Counter>(r, "nvdra_rollback_failures_total",
                                         "Failed prepares whose rollback failed too (something of the claim was "
                                         "left behind), by driver.")),
        unreadable_claims(build<Gauge>(r, "nvdra_checkpoint_unreadable_claims",
                                       "Checkpoint entries whose devices cannot be read, kept aside with their "
                                       "devices left alone, by driver.")),
        mps_daemons(build<Gauge>(r, "nvdra_mps_control_daemons",
                                 "MPS control daemons held by prepared claims (from the checkpoint).")),
        imex_unit(build<Gauge>(r, "nvdra_imex_unit_state",
                               "The host IMEX unit's systemd ActiveState: 1 for the current state, 0 for the others.")),
        build_info(build<Gauge>(r, "nvdra_build_info",
                                "A metric with a constant '1' value labeled by the version nvdra was built from.")),
        scrapes(build<Counter>(r, "promhttp_metric_handler_requests_total",
                               "Total number of scrapes by HTTP status code.")),
        scrapes_inflight(build<Gauge>(r, "promhttp_metric_handler_requests_in_flight",
                                      "Current number of scrapes being served.")) {}

  Family<Counter>& requests;
  Family<Histogram>& duration;
  Family<Gauge>& inflight;
  Family<Gauge>& prepared;
  Family<Counter>& prepare_errors;
  Family<Counter>& unprepare_errors;
  Family<Counter>& api_requests;
  Family<Counter>& watch_restarts;
  Family<Counter>& slice_writes;
  Family<Counter>& checkpoint_saves;
  Family<Counter>& checkpoint_fsyncs;
  Family<Counter>& mig_created;
  Family<Counter>& mig_destroyed;
  Family<Counter>& fabric_calls;
  Family<Histogram>& fabric_seconds;
  Family<Gauge>& fabric_active;
  Family<Counter>& gpu_xids;
  Family<Counter>& gpu_ecc;
  Family<Counter>& gpu_lost;
  Family<Counter>& health_recoveries;
  Family<Gauge>& devices_by_health;
  Family<Counter>& rollback_failures;
  Family<Gauge>& unreadable_claims;
  Family<Gauge>& mps_daemons;
  Family<Gauge>& imex_unit;
  Family<Gauge>& build_info;
  Family<Counter>& scrapes;
  Family<Gauge>& scrapes_inflight;
};

Metrics::Metrics(std::string node, std::string version, const std::vector<std::string>& drivers)
    : node_(std::move(node)),
      registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)),
      start_time_seconds_(process_start_time_seconds()) {
  for (const auto& d : drivers) {
    for (auto op : {Operation::kPrepare, Operation::kUnprepare}) {
      const prometheus::Labels labels{{"driver", d}, {"operation", s(to_string(op))}};
      f_->requests.Add(labels);
      f_->duration.Add(labels, kDurationBuckets);
      f_->inflight.Add(labels);
    }
  }
  f_->mig_created.Add({});
  f_->mig_destroyed.Add({});
  f_->build_info.Add({{"version", version}}).Set(1);
  for (const char* code : {"200", "500", "503"}) f_->scrapes.Add({{"code", code}});
  f_->scrapes_inflight.Add({});
}

Metrics::~Metrics() = default;

void Metrics::request_started(std::string_view driver, Operation op) {
  f_->inflight.Add({{"driver", s(driver)}, {"operation", s(to_string(op))}}).Increment();
}

void Metrics::request_finished(std::string_view driver, Operation op, double seconds, std::string_view error_type) {
  const prometheus::Labels labels{{"driver", s(driver)}, {"operation", s(to_string(op))}};
  f_->inflight.Add(labels).Decrement();
  f_->duration.Add(labels, kDurationBuckets).Observe(seconds);
  if (error_type.empty()) {
    f_->requests.Add(labels).Increment();
    return;
  }
  auto& errors = op == Operation::kPrepare ? f_->prepare_errors : f_->unprepare_errors;
  errors.Add({{"driver", s(driver)}, {"error_type", s(error_type)}}).Increment();
}

void Metrics::set_prepared_devices(std::string_view driver, const std::map<std::string, int64_t>& by_type) {
  // Every type on the page so far is set: one whose devices are all gone reads 0.
  for (const auto& family : f_->prepared.Collect())
    for (const auto& m : family.metric) {
      std::string d, type;
      for (const auto& l : m.label) {
        if (l.name == "driver") d = l.value;
        if (l.name == "device_type") type = l.value;
      }
      if (d == driver && !by_type.count(type))
        f_->prepared.Add({{"node", node_}, {"driver", d}, {"device_type", type}}).Set(0);
    }
  for (const auto& [type, n] : by_type)
    f_->prepared.Add({{"node", node_}, {"driver", s(driver)}, {"device_type", type}}).Set(static_cast<double>(n));
}

void Metrics::set_mps_daemons(std::string_view driver, int64_t daemons) {
  f_->mps_daemons.Add({{"driver", s(driver)}}).Set(static_cast<double>(daemons));
}

void Metrics::set_imex_unit(std::string_view unit, std::string_view active_state) {
  bool known = false;
  for (auto state : kUnitStates) known = known || state == active_state;
  for (auto state : kUnitStates) {
    const bool current = state == active_state || (!known && state == "unknown");
    f_->imex_unit.Add({{"unit", s(unit)}, {"state", s(state)}}).Set(current ? 1 : 0);
  }
}

void Metrics::api_request(std::string_view verb, int http_status) {
  // client-go's rest_client_requests_total says "<error>" for a request that got no answer.
  f_->api_requests.Add({{"verb", s(verb)}, {"code", http_status > 0 ? std::to_string(http_status) : "<error>"}})
      .Increment();
}

void Metrics::watch_restart(std::string_view resource) {
  f_->watch_restarts.Add({{"resource", s(resource)}}).Increment();
}

void Metrics::slice_write(std::string_view op, bool ok) {
  f_->slice_writes.Add({{"operation", s(op)}, {"result", ok ? "success" : "error"}}).Increment();
}

void Metrics::checkpoint_save(std::string_view driver) { f_->checkpoint_saves.Add({{"driver", s(driver)}}).Increment(); }
void Metrics::checkpoint_fsync(std::string_view driver) {
  f_->checkpoint_fsyncs.Add({{"driver", s(driver)}}).Increment();
}
void Metrics::mig_device_created() { f_->mig_created.Add({}).Increment(); }
void Metrics::mig_device_destroyed() { f_->mig_destroyed.Add({}).Increment(); }
void Metrics::fabric_partition_call(std::string_view op, bool ok, double seconds) {
  f_->fabric_calls.Add({{"operation", std::string(op)}, {"result", ok ? "ok" : "error"}}).Increment();
  f_->fabric_seconds.Add({{"operation", std::string(op)}}, kDurationBuckets).Observe(seconds);
}
void Metrics::fabric_partitions_active(std::size_t count) { f_->fabric_active.Add({}).Set(static_cast<double>(count)); }

void Metrics::gpu_xid(std::string_view gpu, uint64_t xid) {
  f_->gpu_xids.Add({{"gpu", std::string(gpu)}, {"xid", std::to_string(xid)}}).Increment();
}
void Metrics::gpu_ecc(std::string_view gpu, bool double_bit) {
  f_->gpu_ecc.Add({{"gpu", std::string(gpu)}, {"type", double_bit ? "double_bit" : "single_bit"}}).Increment();
}
void Metrics::gpu_lost() { f_->gpu_lost.Add({}).Increment(); }
void Metrics::health_recovered(std::string_view gpu, std::string_view reason) {
  f_->health_recoveries.Add({{"gpu", std::string(gpu)}, {"reason", std::string(reason)}}).Increment();
}
void Metrics::devices_by_health(std::size_t healthy, std::size_t unhealthy, std::size_t unknown) {
  f_->devices_by_health.Add({{"health", "healthy"}}).Set(static_cast<double>(healthy));
  f_->devices_by_health.Add({{"health", "unhealthy"}}).Set(static_cast<double>(unhealthy));
  f_->devices_by_health.Add({{"health", "unknown"}}).Set(static_cast<double>(unknown));
}

void Metrics::rollback_failed(std::string_view driver) {
  f_->rollback_failures.Add({{"driver", s(driver)}}).Increment();
}
void Metrics::unreadable_claims(std::string_view driver, std::size_t count) {
  f_->unreadable_claims.Add({{"driver", s(driver)}}).Set(static_cast<double>(count));
}

void Metrics::scrape_started() { f_->scrapes_inflight.Add({}).Increment(); }
void Metrics::scrape_finished(int http_status) {
  f_->scrapes_inflight.Add({}).Decrement();
  f_->scrapes.Add({{"code", std::to_string(http_status)}}).Increment();
}

std::string Metrics::render() const { return render_page(*registry_, start_time_seconds_); }

}  // namespace nvdra::metrics
