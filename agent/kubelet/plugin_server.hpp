#pragma once
// PluginServer — one DRA driver's kubelet plugin: the DRA socket (DRAPlugin v1 + v1beta1, and the
// resource-health stream v1 + v1alpha1 when a HealthSource is given) and the registration socket
// (pluginregistration.Registration). Claims go to the driver's ClaimHandler through DraService.
//
// Life cycle: construct (checks the socket paths), start() on the worker pool (it binds sockets),
// then stop() from the io_context before destruction. stop() cancels every in-flight call, runs
// grpc::Server::Shutdown on a helper thread (it waits for calls that the loop must finish, so it
// can never run on the loop) and removes both socket files, the registration one last so kubelet
// deregisters only when nothing is served any more.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/kubelet/dra_service.hpp"
#include "agent/kubelet/plugin_sockets.hpp"

namespace nvdra::kubelet {

class ClaimHandler;
class HealthSource;

struct PluginServerConfig {
  std::string driver_name;         // e.g. gpu.nvidia.com
  std::string registrar_dir;       // --kubelet-registrar-directory-path
  std::string plugin_data_dir;     // <--kubelet-plugins-directory-path>/<driver>
  std::string rolling_update_uid;  // --rolling-update-uid / POD_UID; empty = the fixed socket names
  std::chrono::seconds health_resend{15};  // upper bound between two health reports
};

enum class RegistrationState { kWaiting, kRegistered, kRejected };

// What kubelet last said in NotifyRegistrationStatus (kept for the agent's status service).
struct RegistrationStatus {
  RegistrationState state = RegistrationState::kWaiting;
  std::string error;          // kubelet's reason when rejected
  unsigned rejections = 0;    // kubelet 1.36+ retries a failed registration with backoff
};

class PluginServer {
 public:
  // `health` may be null: then no health service is served or advertised, exactly like the upstream
  // NVIDIA driver (kubelet gets UNIMPLEMENTED if it asks). Throws std::invalid_argument when a
  // socket path is too long for a unix socket.
  PluginServer(boost::asio::any_io_executor ex, PluginServerConfig config, ClaimHandler& claims,
               HealthSource* health);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // Blocking (mkdir, unlink, bind): run it on the worker pool. The DRA socket listens before the
  // registration socket appears. Throws std::runtime_error naming the path on failure.
  void start();
  // io_context thread. Idempotent; safe when start() never ran or failed. A caller that was itself
  // cancelled must co_await this_coro::reset_cancellation_state() first, or awaiting throws at once.
  boost::asio::awaitable<void> stop();

  const SocketPaths& paths() const;
  // What GetInfo advertises, in kubelet's order of preference.
  std::vector<std::string> supported_versions() const;

  // io_context thread.
  const RegistrationStatus& registration() const;
  void on_registration(std::function<void(const RegistrationStatus&)> fn);

  // The agent's own unprepare of claims (one the API no longer has), through what kubelet's calls go
  // through: the claims' locks and the handler. io_context thread; cancellable as kubelet's calls are.
  boost::asio::awaitable<UnprepareResults> unprepare(std::vector<ClaimRef> claims);

  // In-flight RPC coroutines on both sockets; any thread (tests, shutdown checks).
  std::size_t live_calls() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvdra::kubelet
