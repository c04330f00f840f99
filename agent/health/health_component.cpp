#include "agent/health/health_component.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>

#include "agent/base/log.hpp"
#include "agent/health/health_endpoint.hpp"
#include "agent/health/plugin_probe.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace asio = boost::asio;

namespace nvdra::health {
namespace {

// Upstream's names (cmd/*-kubelet-plugin/health.go); kubelet's probes in the DaemonSet ask "liveness".
constexpr const char* kLiveness = "liveness";

std::string not_registered(kubelet::RegistrationState state) {
  return state == kubelet::RegistrationState::kRejected ? "kubelet rejected the plugin's registration"
                                                        : "not registered with kubelet";
}

}  // namespace

HealthComponent::HealthComponent(asio::any_io_executor ex, runtime::WorkerPool& workers, int port,
                                 std::vector<HealthTarget> targets, std::chrono::milliseconds recheck)
    : ex_(ex),
      workers_(workers),
      requested_port_(port),
      targets_(std::move(targets)),
      recheck_(recheck),
      wake_(ex),
      // What a driver is before kubelet calls, so start-up itself logs no warning.
      last_errors_(targets_.size(), not_registered(kubelet::RegistrationState::kWaiting)) {
  // Before any server of the process is built (components are constructed before anything runs).
  HealthEndpoint::enable_default_service();
}

HealthComponent::~HealthComponent() = default;

std::vector<std::string> HealthComponent::services() const {
  std::vector<std::string> out{"", kLiveness};
  for (const auto& t : targets_) out.push_back(t.driver);
  return out;
}

void HealthComponent::recheck() {
  dirty_ = true;
  wake_.cancel();
}

asio::awaitable<void> HealthComponent::run() {
  endpoint_ = std::make_unique<HealthEndpoint>(requested_port_);
  std::exception_ptr failure;
  try {
    co_await check_until_cancelled();
  } catch (...) {
    failure = std::current_exception();
  }
  co_await asio::this_coro::reset_cancellation_state();
  co_await workers_.run([e = endpoint_.get()] { e->stop(); });
  endpoint_.reset();
  port_ = 0;
  if (failure) std::rethrow_exception(failure);
}

asio::awaitable<void> HealthComponent::check_until_cancelled() {
  auto log = nvdra::logger("healthcheck");
  co_await workers_.run([e = endpoint_.get(), s = services()] { e->start(s); });
  port_ = endpoint_->port();
  log->info("healthcheck serving grpc.health.v1 port={} services=\"{}\"", port_, fmt::join(services(), "\",\""));
  for (;;) {
    if (!dirty_) {
      wake_.expires_after(recheck_);
      // Ends early when recheck() cancels the timer or the component is cancelled (checked below).
      (void)co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return;
    dirty_ = false;
    co_await check_once();
  }
}

asio::awaitable<void> HealthComponent::check_once() {
  auto log = nvdra::logger("healthcheck");
  std::vector<std::string> errors(targets_.size());
  std::vector<bool> waiting(targets_.size());
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& t = targets_[i];
    if (auto state = t.registration(); state != kubelet::RegistrationState::kRegistered) {
      const std::string why = t.waiting ? t.waiting() : std::string();
      waiting[i] = !why.empty();
      errors[i] = waiting[i] ? why : not_registered(state);
      continue;
    }
    errors[i] = co_await probe_plugin(t.sockets, kProbeDeadline);
    // kubelet may have spoken while the probe ran; recheck() has queued another round then.
    if (auto state = t.registration(); errors[i].empty() && state != kubelet::RegistrationState::kRegistered)
      errors[i] = not_registered(state);
  }
  bool all = true;
  bool alive = true;  // every driver serves or waits for what only the node can bring
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const bool serving = errors[i].empty();
    all = all && serving;
    alive = alive && (serving || waiting[i]);
    endpoint_->set(targets_[i].driver, serving);
    if (errors[i] == last_errors_[i]) continue;
    if (serving) log->info("healthcheck driver={} SERVING", targets_[i].driver);
    else log->warn("healthcheck driver={} NOT_SERVING: {}", targets_[i].driver, errors[i]);
    last_errors_[i] = errors[i];
  }
  endpoint_->set("", all);
  endpoint_->set(kLiveness, alive);
  if (static_cast<int>(all) != last_all_) {
    log->info("healthcheck status={}", all ? "SERVING" : "NOT_SERVING");
    last_all_ = static_cast<int>(all);
  }
}

}  // namespace nvdra::health
