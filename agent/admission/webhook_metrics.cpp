#include "agent/admission/webhook_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

#include "agent/metrics/process_metrics.hpp"

namespace nvdra::admission {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

namespace {
// A decision takes tens of microseconds to a few milliseconds; the API server's timeout is 10 s.
const Histogram::BucketBoundaries kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1};
}  // namespace

struct WebhookMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : requests(prometheus::BuildCounter()
                     .Name("nvdra_webhook_requests_total")
                     .Help("AdmissionReviews answered by the webhook, by verdict (allowed, denied, bad_request).")
                     .Register(r)),
        duration(prometheus::BuildHistogram()
                     .Name("nvdra_webhook_request_duration_seconds")
                     .Help("Time to decide an AdmissionReview, from its body read to its answer made.")
                     .Register(r)),
        refused(prometheus::BuildCounter()
                    .Name("nvdra_webhook_refused_connections_total")
                    .Help("Connections and requests refused before a decision, by reason.")
                    .Register(r)),
        reloads(prometheus::BuildCounter()
                    .Name("nvdra_webhook_certificate_reloads_total")
                    .Help("Reloads of the serving certificate after its files changed, by result.")
                    .Register(r)),
        build_info(prometheus::BuildGauge().Name("nvdra_build_info").Help("nvdra's version.").Register(r)),
        scrapes(prometheus::BuildCounter()
                    .Name("promhttp_metric_handler_requests_total")
                    .Help("Total number of scrapes by HTTP status code.")
                    .Register(r)),
        scrapes_inflight(prometheus::BuildGauge()
                             .Name("promhttp_metric_handler_requests_in_flight")
                             .Help("Current number of scrapes being served.")
                             .Register(r)) {}
  Family<Counter>& requests;
  Family<Histogram>& duration;
  Family<Counter>& refused;
  Family<Counter>& reloads;
  Family<Gauge>& build_info;
  Family<Counter>& scrapes;
  Family<Gauge>& scrapes_inflight;
};

WebhookMetrics::WebhookMetrics(std::string version)
    : registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)),
      start_time_seconds_(metrics::process_start_time_seconds()) {
  f_->build_info.Add({{"version", version}}).Set(1);
  for (const char* v : {"allowed", "denied", "bad_request"}) f_->requests.Add({{"verdict", v}});
  f_->duration.Add({}, kBuckets);
  f_->scrapes_inflight.Add({});
}

WebhookMetrics::~WebhookMetrics() = default;

void WebhookMetrics::review(std::string_view verdict, double seconds) {
  f_->requests.Add({{"verdict", std::string(verdict)}}).Increment();
  f_->duration.Add({}, kBuckets).Observe(seconds);
}

void WebhookMetrics::refused(std::string_view reason) { f_->refused.Add({{"reason", std::string(reason)}}).Increment(); }

void WebhookMetrics::certificate_reload(bool ok) {
  f_->reloads.Add({{"result", ok ? "success" : "failure"}}).Increment();
}

void WebhookMetrics::scrape_started() { f_->scrapes_inflight.Add({}).Increment(); }

void WebhookMetrics::scrape_finished(int http_status) {
  f_->scrapes_inflight.Add({}).Decrement();
  f_->scrapes.Add({{"code", std::to_string(http_status)}}).Increment();
}

std::string WebhookMetrics::render() const { return metrics::render_page(*registry_, start_time_seconds_); }

}  // namespace nvdra::admission
