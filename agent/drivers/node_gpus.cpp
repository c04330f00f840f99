#include "agent/drivers/node_gpus.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/system/system_error.hpp>

#include <chrono>
#include <filesystem>

#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/driver_watch.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "nvml/discovery.hpp"

namespace nvdra::drivers {

Result<std::shared_ptr<const cdi::DriverInventory>> DiscoveredGpus::driver_files(const cdi::DriverRoots& roots) {
  std::lock_guard lock(driver_mu_);
  if (!driver_ || !(driver_->roots() == roots)) driver_ = std::make_unique<cdi::DriverDiscovery>(roots);
  return driver_->current();
}

cdi::DriverRoots driver_roots(const config::Options& o, const nvml::DeviceModel& model) {
  cdi::DriverRoots roots{o.nvidia_driver_root, o.container_driver_root, o.host_root, {}, model.system.driver_version};
  roots.hook_path = cdi::resolve_cdi_hook(roots, o.nvidia_cdi_hook_path);
  return roots;
}

NodeGpus::NodeGpus(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, const config::Options& options)
    : ex_(std::move(ex)), workers_(workers), options_(options) {}
NodeGpus::~NodeGpus() = default;

void NodeGpus::prefetch() {
  boost::asio::co_spawn(
      ex_, [this]() -> boost::asio::awaitable<void> { static_cast<void>(co_await get()); }, boost::asio::detached);
}

boost::asio::awaitable<Result<std::shared_ptr<DiscoveredGpus>>> NodeGpus::get() {
  while (opening_) {
    auto timer = std::make_shared<boost::asio::steady_timer>(ex_, boost::asio::steady_timer::time_point::max());
    waiters_.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    std::erase(waiters_, timer);
    auto state = co_await boost::asio::this_coro::cancellation_state;
    if (state.cancelled() != boost::asio::cancellation_type::none)
      throw boost::system::system_error(boost::asio::error::operation_aborted);
  }
  if (discovered_) co_return discovered_;
  opening_ = true;
  const auto& o = options_;
  nvml::LoadOptions load{o.nvml_library, o.nvidia_driver_root};
  const std::string sysfs = (std::filesystem::path(o.host_root) / "sys").string();
  auto opened = co_await workers_.run([load, sysfs]() -> Result<std::shared_ptr<DiscoveredGpus>> {
    using clock = std::chrono::steady_clock;
    const auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    auto out = std::make_shared<DiscoveredGpus>();
    const auto t0 = clock::now();
    auto lib = nvml::open_nvml(load);
    if (!lib) return lib.error();
    out->library = std::move(*lib);
    const auto t1 = clock::now();
    auto model = nvml::discover(*out->library, nvml::DiscoveryOptions{sysfs});
    if (!model) return model.error();
    out->model = std::move(*model);
    // Both drivers wait for this at start: how long NVML took is the first thing to look at when
    // a node is slow to publish.
    nvdra::logger("nvml")->debug("opened in {:.1f} ms, discovered {} GPU(s) in {:.1f} ms", ms(t1 - t0),
                                 out->model.gpus.size(), ms(clock::now() - t1));
    return out;
  });
  opening_ = false;
  if (opened) discovered_ = *opened;
  for (auto& w : waiters_) w->cancel();
  co_return opened;
}

namespace {
// How often the driver is tried while no watched directory changes (a directory created later, a
// filesystem without inotify): well under a kubelet-visible delay, cheap (one dlopen and nvmlInit).
constexpr std::chrono::milliseconds kDriverRetry{2000};
}  // namespace

void NodeGpus::set_waiting(std::string why) {
  if (why == waiting_) return;
  waiting_ = std::move(why);
  for (auto& f : waiting_listeners_) f();
}

boost::asio::awaitable<Result<std::shared_ptr<DiscoveredGpus>>> NodeGpus::get_or_wait() {
  auto got = co_await get();
  if (got || got.error().code != ErrorCode::kUnavailable) co_return got;
  auto log = nvdra::logger("nvml");
  // The watch first, then one more try: a driver that appeared in between is not missed.
  DriverWatch watch(ex_, driver_watch_dirs(options_));
  const auto since = std::chrono::steady_clock::now();
  for (got = co_await get(); !got && got.error().code == ErrorCode::kUnavailable; got = co_await get()) {
    const std::string why = "waiting for the NVIDIA driver: " + got.error().describe();
    if (why != waiting_) log->warn("{} (watching {} directories; no restart needed once it is installed)", why,
                                   watch.watched());
    set_waiting(why);
    co_await watch.next(kDriverRetry);
  }
  if (got) {
    const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
    log->info("NVIDIA driver {} found after waiting {:.1f} s: {} GPU(s)", (*got)->model.system.driver_version, waited,
              (*got)->model.gpus.size());
  }
  set_waiting("");
  co_return got;
}

}  // namespace nvdra::drivers
