#include "agent/metrics/metrics_component.hpp"

#include <exception>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/metrics/metrics_server.hpp"

namespace nvdra::metrics {

bool MetricsComponent::should_run(const config::Options& options) {
  return !options.http_endpoint.empty() && !options.metrics_path.empty();
}

MetricsComponent::MetricsComponent(RunContext& ctx) : ctx_(ctx), server_(listen()) {}

MetricsComponent::~MetricsComponent() = default;

std::unique_ptr<MetricsServer> MetricsComponent::listen() const {
  Metrics* m = &ctx_.metrics;
  MetricsPage page{[m] { return m->render(); }, [m] { m->scrape_started(); },
                   [m](int status) { m->scrape_finished(status); }};
  auto server = std::make_unique<MetricsServer>(ctx_.executor, ctx_.options.http_endpoint, ctx_.options.metrics_path,
                                                std::move(page));
  const auto where = server->local_endpoint();
  nvdra::logger("metrics")->info("metrics listening address={} port={} path={}", where.address().to_string(),
                                 where.port(), ctx_.options.metrics_path);
  return server;
}

boost::asio::awaitable<void> MetricsComponent::run() {
  if (!server_) server_ = listen();
  std::exception_ptr failure;
  try {
    co_await server_->run();
  } catch (...) {
    failure = std::current_exception();
  }
  server_.reset();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace nvdra::metrics
