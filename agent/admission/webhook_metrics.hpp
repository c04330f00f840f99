#pragma once
// The webhook's Prometheus series, served like the agent's (MetricsServer on --http-endpoint,
// --metrics-path; families sorted by name, process_* from /proc/self, promhttp_* for the scrapes):
//  * nvdra_webhook_requests_total{verdict}: AdmissionReviews answered (allowed | denied |
//    bad_request) — denials are the verdict="denied" series;
//  * nvdra_webhook_request_duration_seconds: the decision, from the request's body read to its
//    answer made (TLS and the network are the API server's to measure; buckets from 100 µs);
//  * nvdra_webhook_refused_connections_total{reason}: not_tls | handshake | too_large | malformed |
//    connections (over the limit of open connections);
//  * nvdra_webhook_certificate_reloads_total{result}: success | failure;
//  * nvdra_build_info{version}.
// Thread-safe (prometheus-cpp); used from the io_context thread.
#include <memory>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
}

namespace nvdra::admission {

class WebhookMetrics {
 public:
  explicit WebhookMetrics(std::string version);
  ~WebhookMetrics();
  WebhookMetrics(const WebhookMetrics&) = delete;
  WebhookMetrics& operator=(const WebhookMetrics&) = delete;

  void review(std::string_view verdict, double seconds);
  void refused(std::string_view reason);
  void certificate_reload(bool ok);
  void scrape_started();
  void scrape_finished(int http_status);

  std::string render() const;

  struct Families;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  double start_time_seconds_;
};

}  // namespace nvdra::admission
