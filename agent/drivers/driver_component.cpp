#include "agent/drivers/driver_component.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>

#include "agent/base/log.hpp"
#include "agent/drivers/node_resources.hpp"
#include "k8s/slice_publisher.hpp"
#include "agent/kubelet/no_devices_claim_handler.hpp"
#include "agent/runtime/readiness.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::drivers {
namespace fs = std::filesystem;

namespace {

// Upstream creates the plugin data directory 0750; kubelet only needs to reach the socket in it.
void ensure_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0750) != 0)
    throw std::runtime_error("cannot set mode 0750 on " + dir.string() + ": " + std::strerror(errno));
}

}  // namespace

DriverComponent::DriverComponent(config::DriverKind kind, RunContext& ctx)
    : kind_(kind), ctx_(ctx), claims_(std::make_unique<kubelet::NoDevicesClaimHandler>(name())) {
  const auto cfg = plugin_config();
  // Checked now so a path that cannot work stops start-up with one clear line, not a restart loop.
  (void)kubelet::socket_paths(cfg.driver_name, cfg.registrar_dir, cfg.plugin_data_dir, cfg.rolling_update_uid);
}

DriverComponent::~DriverComponent() = default;

std::string DriverComponent::name() const { return config::driver_name(kind_); }

std::string DriverComponent::registered_condition(config::DriverKind kind) {
  return std::string(config::driver_name(kind)) + " registered";
}
std::string DriverComponent::published_condition(config::DriverKind kind) {
  return std::string(config::driver_name(kind)) + " published";
}

void DriverComponent::declare(runtime::Readiness& readiness) {
  readiness.expect(registered_condition(kind_));
  readiness.expect(published_condition(kind_));
}

kubelet::PluginServerConfig DriverComponent::plugin_config() const {
  kubelet::PluginServerConfig cfg;
  cfg.driver_name = name();
  cfg.registrar_dir = ctx_.options.kubelet_registrar_dir;
  cfg.plugin_data_dir = (fs::path(ctx_.options.kubelet_plugins_dir) / name()).string();
  cfg.rolling_update_uid = ctx_.options.rolling_update_uid;
  return cfg;
}

kubelet::RegistrationStatus DriverComponent::registration() const {
  return plugin_ ? plugin_->registration() : kubelet::RegistrationStatus{};
}

boost::asio::awaitable<void> DriverComponent::serve() {
  auto log = nvdra::logger(name());
  const fs::path data_dir(plugin_config().plugin_data_dir);
  auto start = [data_dir, plugin = plugin_.get()] {
    ensure_private_dir(data_dir);
    plugin->start();
  };
  co_await ctx_.workers.run(std::move(start));
  log->info("driver={} data_dir={} started", name(), data_dir.string());
  co_await publish();
}

boost::asio::awaitable<void> DriverComponent::publish() {
  auto log = nvdra::logger(name());
  if (!api_server_configured(ctx_.options)) {
    log->warn("driver={} no --kubeconfig and not in a cluster: serving kubelet without publishing "
              "ResourceSlices, ignoring", name());
    ctx_.readiness.satisfy(published_condition(kind_));
    boost::asio::steady_timer forever(ctx_.executor, boost::asio::steady_timer::time_point::max());
    co_await forever.async_wait(boost::asio::use_awaitable);
    co_return;
  }
  auto api = connect_api_server(ctx_);
  if (!api) throw std::runtime_error("driver " + name() + ": Kubernetes API: " + api.error().describe());
  auto resources = co_await discover_resources(kind_, ctx_);
  if (!resources) throw std::runtime_error("driver " + name() + ": discovery: " + resources.error().describe());
  log->info("driver={} devices={} publishing", name(), resources->devices.size());
  publisher_ = std::make_unique<k8s::SlicePublisher>(ctx_.executor, *api,
                                                     k8s::PublisherOptions{name(), ctx_.options.node_name});
  publisher_->on_converged([this] { ctx_.readiness.satisfy(published_condition(kind_)); });
  publisher_->set_desired(std::move(*resources));
  co_await publisher_->run();
}

boost::asio::awaitable<void> DriverComponent::run() {
  const auto cfg = plugin_config();
  // No device health source in this build: the server then advertises no health service, as the
  // upstream driver does. The NVML health source plugs in here as the fourth argument.
  plugin_ = std::make_unique<kubelet::PluginServer>(ctx_.executor, cfg, *claims_, nullptr);
  plugin_->on_registration([this](const kubelet::RegistrationStatus& status) {
    if (status.state == kubelet::RegistrationState::kRegistered) ctx_.readiness.satisfy(registered_condition(kind_));
  });

  // g++ 12 destroys temporaries of a co_await expression inside a try block twice, so the try
  // block holds nothing but one call.
  std::exception_ptr failure;
  try {
    co_await serve();
  } catch (...) {
    failure = std::current_exception();
  }
  // Cancelled (shutdown) or failed: either way stop serving and remove the sockets before returning.
  // A cancelled coroutine throws at its next co_await; a fresh cancellation state lets stop() run.
  co_await boost::asio::this_coro::reset_cancellation_state();
  co_await plugin_->stop();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace nvdra::drivers
