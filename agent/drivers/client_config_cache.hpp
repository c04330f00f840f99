#pragma once
// ClientConfigCache — the kubeconfig (or the pod's service account) that every API client of the
// agent is made from, read on a worker with its TLS context built there too. At start each driver
// makes three or four clients (slices, claim reads, Events, driver-managed IMEX); each used to read
// and parse the kubeconfig on the io_context thread, and the first also built the OpenSSL context
// (about 2 ms), which held up the other driver's start behind it.
//
// A caller that comes while a load runs waits for it; one that comes within kReuseFor of the last
// good load gets a copy of it; later ones (a driver restarted much later: perhaps a rotated
// kubeconfig) read the files again. A failed load is never kept: the next caller tries again.
// io_context thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "agent/base/result.hpp"
#include "k8s/client_config.hpp"
#include "k8s/single_flight.hpp"

namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

class ClientConfigCache {
 public:
  static constexpr std::chrono::seconds kReuseFor{10};
  // Runs on a worker. What it returns beside the config is kept alive with it (the TLS context,
  // so that clients made from the config find it built).
  struct Loaded {
    Result<k8s::ClientConfig> config = k8s::ClientConfig{};
    std::shared_ptr<const void> keep;
  };
  using Loader = std::function<Loaded()>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // The real loader: --kubeconfig when given, else in-cluster; the TLS context built.
  static Loader from_files(std::string kubeconfig_path);

  ClientConfigCache(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, Loader load,
                    Clock clock = std::chrono::steady_clock::now);

  // A copy of the loaded config; the caller sets its own qps, burst and pacing. Cancellable.
  boost::asio::awaitable<Result<k8s::ClientConfig>> get();

  std::size_t loads() const { return loads_; }

 private:
  runtime::WorkerPool& workers_;
  Loader load_;
  Clock clock_;
  k8s::SingleFlight flight_;  // one load at a time; callers that come meanwhile wait for it
  std::size_t loads_ = 0;
  std::optional<Loaded> last_;  // the last good load
  std::chrono::steady_clock::time_point last_at_{};
};

}  // namespace nvdra::drivers
