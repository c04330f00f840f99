#pragma once
// NodeGpus — the agent's one NVML session and the device model discovered through it, shared by
// both drivers: gpu.nvidia.com publishes and prepares from it (DynamicMIG creates MIG devices
// through the library, so it stays open for the agent's lifetime), compute-domain.nvidia.com reads
// the node's NVLink clique from it. NVML is opened and the node discovered once, on the worker
// pool; callers that ask while that runs wait for the same answer. A failure is not kept: the next
// caller (a driver restarted by the Supervisor) tries again. io_context thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "cdi/driver_discovery.hpp"
#include "nvml/device_model.hpp"
#include "nvml/gpu_library.hpp"

namespace nvdra::config { struct Options; }
namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

struct DiscoveredGpus {
  std::unique_ptr<nvml::GpuLibrary> library;
  nvml::DeviceModel model;  // as discovered at start

  // The driver's files for CDI specs, found once for both drivers (each used to walk the driver
  // root itself: ~1,500 stats and opens at a start) and found again when libcuda.so.1 moves or the
  // roots change. Blocking (the worker pool); thread-safe.
  Result<std::shared_ptr<const cdi::DriverInventory>> driver_files(const cdi::DriverRoots& roots);

 private:
  std::mutex driver_mu_;
  std::unique_ptr<cdi::DriverDiscovery> driver_;
};

// The driver roots of the node's CDI specs: the options' roots, the hook resolved, NVML's driver
// version. Blocking (a few stats).
cdi::DriverRoots driver_roots(const config::Options& o, const nvml::DeviceModel& model);

class NodeGpus {
 public:
  NodeGpus(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, const config::Options& options);
  ~NodeGpus();
  boost::asio::awaitable<Result<std::shared_ptr<DiscoveredGpus>>> get();
  // Starts the lookup now, without a caller: NVML's open and discovery are the longest step of a
  // start, and the drivers ask only after creating their API clients. A failure is not kept.
  void prefetch();
  // get(), but while NVML says the driver is not there (kUnavailable: no library, kernel module not
  // loaded) it waits for it instead of failing: logs "waiting for the NVIDIA driver" once, sets
  // waiting(), and tries again at each change DriverWatch sees (or its fallback period). Other
  // errors end the wait. Cancellable.
  boost::asio::awaitable<Result<std::shared_ptr<DiscoveredGpus>>> get_or_wait();
  // Why the GPUs are not there yet while get_or_wait() waits ("waiting for the NVIDIA driver: …"),
  // else "". For the status and the health check.
  const std::string& waiting() const { return waiting_; }
  // Drops the session found so far (the driver changed under it): the next get() opens NVML again.
  // The library closes once its last holder (the GPU driver's parts) lets go.
  void forget() { discovered_.reset(); }
  // Called when waiting() changes (status and health refresh).
  void on_waiting_change(std::function<void()> f) { waiting_listeners_.push_back(std::move(f)); }

 private:
  boost::asio::any_io_executor ex_;
  runtime::WorkerPool& workers_;
  const config::Options& options_;
  std::shared_ptr<DiscoveredGpus> discovered_;
  bool opening_ = false;
  std::string waiting_;
  std::vector<std::function<void()>> waiting_listeners_;
  void set_waiting(std::string why);
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters_;  // woken when an attempt ends
};

}  // namespace nvdra::drivers
