#include "agent/drivers/client_config_cache.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "agent/runtime/worker_pool.hpp"
#include "k8s/tls_context.hpp"

namespace nvdra::drivers {

namespace asio = boost::asio;

ClientConfigCache::Loader ClientConfigCache::from_files(std::string kubeconfig_path) {
  return [path = std::move(kubeconfig_path)] {
    Loaded out;
    // qps and burst are each client's own; load_client_config wants some.
    out.config = k8s::load_client_config(path, 0, 0);
    // A context that cannot be built is reported by the client that asks for it, with its words.
    if (out.config)
      if (auto tls = k8s::tls_context_for(*out.config)) out.keep = std::move(*tls);
    return out;
  };
}

ClientConfigCache::ClientConfigCache(asio::any_io_executor ex, runtime::WorkerPool& workers, Loader load, Clock clock)
    : ex_(std::move(ex)), workers_(workers), load_(std::move(load)), clock_(std::move(clock)) {}

asio::awaitable<void> ClientConfigCache::wait_for_load() {
  auto timer = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
  waiters_.push_back(timer);
  boost::system::error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  std::erase(waiters_, timer);
  auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none)
    throw boost::system::system_error(asio::error::operation_aborted);
}

asio::awaitable<Result<k8s::ClientConfig>> ClientConfigCache::get() {
  while (loading_) co_await wait_for_load();
  if (last_ && clock_() - last_at_ < kReuseFor) co_return last_->config;
  loading_ = true;
  // Also when the caller is cancelled: a waiter then loads itself.
  struct Release {
    ClientConfigCache& self;
    ~Release() {
      self.loading_ = false;
      for (auto& w : self.waiters_) w->cancel();
    }
  } release{*this};
  ++loads_;
  auto loaded = co_await workers_.run([load = load_] { return load(); });
  if (!loaded.config) co_return loaded.config;
  last_ = std::move(loaded);
  last_at_ = clock_();
  co_return last_->config;
}

}  // namespace nvdra::drivers
