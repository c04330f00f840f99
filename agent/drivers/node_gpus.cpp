#include "agent/drivers/node_gpus.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/system/system_error.hpp>

#include <filesystem>

#include "agent/config/options.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "nvml/discovery.hpp"

namespace nvdra::drivers {

NodeGpus::NodeGpus(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, const config::Options& options)
    : ex_(std::move(ex)), workers_(workers), options_(options) {}
NodeGpus::~NodeGpus() = default;

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
    auto out = std::make_shared<DiscoveredGpus>();
    auto lib = nvml::open_nvml(load);
    if (!lib) return lib.error();
    out->library = std::move(*lib);
    auto model = nvml::discover(*out->library, nvml::DiscoveryOptions{sysfs});
    if (!model) return model.error();
    out->model = std::move(*model);
    return out;
  });
  opening_ = false;
  if (opened) discovered_ = *opened;
  for (auto& w : waiters_) w->cancel();
  co_return opened;
}

}  // namespace nvdra::drivers
