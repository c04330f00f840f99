#pragma once
// DriverBackend — what differs between the two DRA drivers inside a DriverComponent: how the
// driver starts (stores, base CDI spec, crash recovery), which ClaimHandler serves kubelet, which
// devices it publishes, and its device health. DriverComponent owns the sockets, registration and
// the ResourceSlice publisher and asks the backend for the rest, in this order:
//   start(api) → claims()/health() handed to the kubelet plugin → resources() published.
// A failed start() fails this driver only (the Supervisor restarts it with backoff); the other
// driver keeps running. All calls on the io_context thread.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>
#include <string>

#include "agent/base/device.hpp"
#include "agent/base/result.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "agent/runtime/component.hpp"
#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::k8s {
class ApiServer;
class EventRecorder;
}  // namespace nvdra::k8s
namespace nvdra::claims { struct Checkpoint; }
namespace nvdra::kubelet { class HealthSource; }

namespace nvdra::drivers {

class DriverBackend {
 public:
  virtual ~DriverBackend() = default;
  // Opens what the driver needs and repairs state left by a crash, before kubelet is served.
  // `api` is the prepare-path client (claim reads, --claim-read-qps); null when no API server is
  // configured (claims then fail with a clear error).
  virtual boost::asio::awaitable<Status> start(std::shared_ptr<k8s::ApiServer> api) = 0;
  // Valid after a successful start(), until the backend is destroyed.
  virtual kubelet::ClaimHandler& claims() = 0;
  virtual kubelet::HealthSource* health() { return nullptr; }
  // Follows device health while the driver serves (only called when health() is not null); ends
  // only by cancellation. A change shows in health()'s generation and in resources()' taints.
  virtual boost::asio::awaitable<void> run_health() { co_return; }
  // Sets the health columns of the status rows (default: left "unknown", nothing measures it).
  virtual void fill_health(std::vector<systemd_bus::DeviceStatus>& rows) const { (void)rows; }
  // Returns (why) when the node's driver changed under the running backend (unloaded, another version
  // loaded): the DriverComponent then starts the driver again, NVML opened anew (issue #30). Never
  // returns by default. Cancellable.
  virtual boost::asio::awaitable<std::string> driver_changed() {
    boost::asio::steady_timer never(co_await boost::asio::this_coro::executor,
                                    boost::asio::steady_timer::time_point::max());
    co_await never.async_wait(boost::asio::use_awaitable);
    co_return std::string();
  }
  // The backend's own background work while the driver serves (driver-managed IMEX: removing the
  // domain directories of deleted ComputeDomains), awaited by DriverComponent inside its serving scope
  // after start(): cancelled at shutdown or restart, and finished before the backend is destroyed, so
  // it may use every member. Never returns by default; ends only by cancellation.
  virtual boost::asio::awaitable<void> run() {
    boost::asio::steady_timer never(co_await boost::asio::this_coro::executor,
                                    boost::asio::steady_timer::time_point::max());
    co_await never.async_wait(boost::asio::use_awaitable);
  }
  // What this node publishes for the driver; called after start().
  virtual boost::asio::awaitable<Result<DriverResources>> resources() = 0;
  // The claims as the checkpoint holds them now (for status), or null before start().
  virtual const claims::Checkpoint* checkpoint() const { return nullptr; }
  // A standing problem found at start that does not stop the driver (e.g. no nvidia-cdi-hook), shown
  // as the driver's status detail while nothing more pressing is; "" when none.
  virtual std::string notice() const { return {}; }
  // Where the backend reports what operators must see (Kubernetes Events); set before start(),
  // null when no API server is configured.
  void set_events(k8s::EventRecorder* events) { events_ = events; }
  // Where the backend hands what it publishes when that changes after start (PassthroughSupport:
  // one face of a GPU withdrawn while the other is prepared); called on the io_context thread.
  void on_resources_changed(std::function<void(DriverResources)> f) { resources_changed_ = std::move(f); }
  // How the backend's own work unprepares a claim as kubelet would (the claim's lock, status, metrics,
  // Events): "" or the error. Set once kubelet is served, before run().
  using Unprepare = std::function<boost::asio::awaitable<std::string>(kubelet::ClaimRef)>;
  void set_unprepare(Unprepare f) { unprepare_ = std::move(f); }

 protected:
  k8s::EventRecorder* events_ = nullptr;
  std::function<void(DriverResources)> resources_changed_;
  Unprepare unprepare_;
};

}  // namespace nvdra::drivers
