// nvdra-webhook — the validating admission webhook for ResourceClaims and ResourceClaimTemplates
// (upstream's cmd/webhook, on prepare's own config decoder). Flags as upstream's webhook where it
// has them (--tls-cert-file, --tls-private-key-file, --port, --feature-gates or env FEATURE_GATES), plus the agent's
// metrics flags (--http-endpoint, --metrics-path) and --log-level / --log-format.
// Exit status: 0 after SIGTERM or SIGINT, 1 start-up failure (a named flag or file), 2 usage.
#include <CLI/CLI.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <optional>

#include "agent/admission/config_gates.hpp"
#include "agent/admission/tls_files.hpp"
#include "agent/admission/webhook_metrics.hpp"
#include "agent/admission/webhook_server.hpp"
#include "agent/base/log.hpp"
#include "agent/metrics/metrics_server.hpp"
#include "agent/runtime/logging.hpp"
#include "agent/runtime/stop_signals.hpp"

#ifndef NVDRA_VERSION
#error "NVDRA_VERSION must be defined by the build"
#endif

namespace {

namespace asio = boost::asio;
using namespace nvdra;

struct Flags {
  std::string cert_file, key_file, feature_gates, http_endpoint, metrics_path = "/metrics";
  std::string log_level = "info", log_format = "text";
  int port = 443;
};

int serve(const Flags& flags, const claims::ConfigGates& gates) {
  auto log = nvdra::logger("webhook");
  admission::TlsFiles tls(flags.cert_file, flags.key_file);
  if (auto s = tls.load(); !s) {
    log->error("{}", s.error().message);
    return 1;
  }
  asio::io_context io(1);
  admission::WebhookMetrics metrics(NVDRA_VERSION);
  std::optional<admission::WebhookServer> server;
  std::optional<nvdra::metrics::MetricsServer> scrape;
  try {
    server.emplace(io.get_executor(), admission::WebhookServerOptions{":" + std::to_string(flags.port), gates}, tls,
                   metrics);
    if (!flags.http_endpoint.empty())
      scrape.emplace(io.get_executor(), flags.http_endpoint, flags.metrics_path,
                     nvdra::metrics::MetricsPage{[&] { return metrics.render(); }, [&] { metrics.scrape_started(); },
                                                 [&](int code) { metrics.scrape_finished(code); }});
  } catch (const std::exception& e) {
    log->error("{}", e.what());
    return 1;
  }
  asio::cancellation_signal stop_server, stop_scrape;
  asio::co_spawn(io, server->run(), asio::bind_cancellation_slot(stop_server.slot(), [](std::exception_ptr) {}));
  if (scrape)
    asio::co_spawn(io, scrape->run(), asio::bind_cancellation_slot(stop_scrape.slot(), [](std::exception_ptr) {}));
  runtime::StopSignals signals(io.get_executor());
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const int sig = co_await signals.wait();
        log->info("signal {}: stopping", sig);
        stop_server.emit(asio::cancellation_type::all);
        stop_scrape.emit(asio::cancellation_type::all);
      },
      asio::detached);
  log->info("listening on port {} (TLS), /validate-resource-claim-parameters and /readyz{}",
            server->local_endpoint().port(),
            scrape ? ", metrics on port " + std::to_string(scrape->local_endpoint().port()) : std::string());
  io.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nvdra-webhook: validating admission webhook for the opaque configs of gpu.nvidia.com and "
               "compute-domain.nvidia.com in ResourceClaims and ResourceClaimTemplates",
               "nvdra-webhook"};
  app.set_version_flag("--version", std::string("nvdra-webhook ") + NVDRA_VERSION);
  Flags flags;
  app.add_option("--tls-cert-file", flags.cert_file, "Serving certificate (chain) in PEM; re-read when it changes")
      ->required();
  app.add_option("--tls-private-key-file", flags.key_file, "Its private key in PEM; re-read when it changes")->required();
  app.add_option("--port", flags.port, "TLS port to listen on (every interface; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--feature-gates", flags.feature_gates,
                 "The agents' feature gates (A=true,B=false): configs are checked under them")
      ->envname("FEATURE_GATES");
  app.add_option("--http-endpoint", flags.http_endpoint, "Metrics listen address ([host]:port); empty is off");
  app.add_option("--metrics-path", flags.metrics_path, "HTTP path of the metrics");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error");
  app.add_option("--log-format", flags.log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const auto level = runtime::parse_log_level(flags.log_level);
  if (!level) {
    std::fprintf(stderr, "nvdra-webhook: --log-level=%s: use trace, debug, info, warn or error\n",
                 flags.log_level.c_str());
    return 2;
  }
  runtime::init_logging(
      runtime::choose_log_shape(flags.log_format == "json" ? runtime::LogFormat::kJson : runtime::LogFormat::kText),
      *level);
  auto gates = admission::parse_config_gates(flags.feature_gates);
  if (!gates) {
    std::fprintf(stderr, "nvdra-webhook: --feature-gates: %s\n", gates.error().message.c_str());
    return 2;
  }
  runtime::block_stop_signals();  // before any thread: the loop alone reads them (StopSignals)
  return serve(flags, *gates);
}
