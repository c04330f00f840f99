#include "agent/drivers/client_config_cache.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/runtime/worker_pool.hpp"

namespace asio = boost::asio;

namespace nvdra::drivers {
namespace {

ClientConfigCache::Loader counting(std::atomic<int>& loads, std::thread::id& loaded_on, std::string host = "api") {
  return [&loads, &loaded_on, host] {
    ++loads;
    loaded_on = std::this_thread::get_id();
    ClientConfigCache::Loaded out;
    k8s::ClientConfig cfg;
    cfg.host = host;
    out.config = cfg;
    return out;
  };
}

// Runs `n` get()s started together; returns their hosts ("error: ..." for a failed one).
std::vector<std::string> get_together(asio::io_context& io, ClientConfigCache& cache, int n) {
  std::vector<std::string> hosts;
  for (int i = 0; i < n; ++i)
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      auto cfg = co_await cache.get();
      hosts.push_back(cfg ? cfg->host : "error: " + cfg.error().message);
    }, asio::detached);
  io.restart();
  io.run();
  return hosts;
}

TEST(ClientConfigCache, ClientsMadeTogetherReadTheFilesOnceOnAWorker) {
  asio::io_context io;
  runtime::WorkerPool workers(2);
  std::atomic<int> loads{0};
  std::thread::id loaded_on;
  ClientConfigCache cache(io.get_executor(), workers, counting(loads, loaded_on));
  EXPECT_EQ(get_together(io, cache, 4), (std::vector<std::string>{"api", "api", "api", "api"}));
  EXPECT_EQ(loads.load(), 1);
  EXPECT_NE(loaded_on, std::this_thread::get_id());  // io.run() ran here: the load did not
}

TEST(ClientConfigCache, ALoadIsReusedForAWhileThenTheFilesAreReadAgain) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  std::atomic<int> loads{0};
  std::thread::id loaded_on;
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  ClientConfigCache cache(io.get_executor(), workers, counting(loads, loaded_on), [&now] { return now; });
  get_together(io, cache, 1);
  now += ClientConfigCache::kReuseFor - std::chrono::seconds(1);
  get_together(io, cache, 1);
  EXPECT_EQ(loads.load(), 1);
  now += std::chrono::seconds(1);  // a driver restarted later reads a kubeconfig that may have rotated
  get_together(io, cache, 1);
  EXPECT_EQ(loads.load(), 2);
}

TEST(ClientConfigCache, AFailedLoadIsNotKept) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  int loads = 0;
  ClientConfigCache cache(io.get_executor(), workers, [&loads] {
    ClientConfigCache::Loaded out;
    if (++loads == 1) {
      out.config = Error{ErrorCode::kInvalidArgument, "kubeconfig /etc/kubeconfig: no current-context", {}, {}};
    } else {
      k8s::ClientConfig cfg;
      cfg.host = "api";
      out.config = cfg;
    }
    return out;
  });
  EXPECT_EQ(get_together(io, cache, 1), std::vector<std::string>{"error: kubeconfig /etc/kubeconfig: no current-context"});
  EXPECT_EQ(get_together(io, cache, 1), std::vector<std::string>{"api"});
  EXPECT_EQ(loads, 2);
  EXPECT_EQ(cache.loads(), 2u);
}

TEST(ClientConfigCache, TheRealLoaderReadsTheKubeconfigAndNamesItWhenItCannot) {
  asio::io_context io;
  runtime::WorkerPool workers(1);
  const std::string missing = ::testing::TempDir() + "/no-such-kubeconfig";
  ClientConfigCache cache(io.get_executor(), workers, ClientConfigCache::from_files(missing));
  auto hosts = get_together(io, cache, 1);
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_NE(hosts[0].find(missing), std::string::npos) << hosts[0];

  const std::string path = ::testing::TempDir() + "/client-config-cache-kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                         "clusters: [{name: k, cluster: {server: 'https://10.0.0.1:6443', insecure-skip-tls-verify: true}}]\n"
                         "users: [{name: u, user: {token: t}}]\n"
                         "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
  ClientConfigCache real(io.get_executor(), workers, ClientConfigCache::from_files(path));
  EXPECT_EQ(get_together(io, real, 2), (std::vector<std::string>{"10.0.0.1", "10.0.0.1"}));
}

}  // namespace
}  // namespace nvdra::drivers
