#include "agent/drivers/driver_component.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "agent/base/log.hpp"
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

DriverComponent::DriverComponent(config::DriverKind kind, RunContext& ctx) : kind_(kind), ctx_(ctx) {}

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

boost::asio::awaitable<void> DriverComponent::run() {
  auto log = nvdra::logger(name());
  const fs::path data_dir = fs::path(ctx_.options.kubelet_plugins_dir) / name();
  co_await ctx_.workers.run([data_dir] { ensure_private_dir(data_dir); });
  log->info("driver={} data_dir={} started", name(), data_dir.string());
  // Nothing to register with or publish to yet in this build: the conditions hold trivially.
  ctx_.readiness.satisfy(registered_condition(kind_));
  ctx_.readiness.satisfy(published_condition(kind_));
  boost::asio::steady_timer forever(ctx_.executor, boost::asio::steady_timer::time_point::max());
  co_await forever.async_wait(boost::asio::use_awaitable);
}

}  // namespace nvdra::drivers
