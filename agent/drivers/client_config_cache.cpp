#include "agent/drivers/client_config_cache.hpp"

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
    : workers_(workers), load_(std::move(load)), clock_(std::move(clock)), flight_(std::move(ex)) {}

asio::awaitable<Result<k8s::ClientConfig>> ClientConfigCache::get() {
  co_await flight_.wait_idle();
  if (last_ && clock_() - last_at_ < kReuseFor) co_return last_->config;
  // Also when the caller is cancelled: a waiter then loads itself.
  auto run = flight_.begin();
  ++loads_;
  auto loaded = co_await workers_.run([load = load_] { return load(); });
  if (!loaded.config) co_return loaded.config;
  last_ = std::move(loaded);
  last_at_ = clock_();
  co_return last_->config;
}

}  // namespace nvdra::drivers
