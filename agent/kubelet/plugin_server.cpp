#include "agent/kubelet/plugin_server.hpp"

#include <fmt/format.h>
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>
#include <sys/stat.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "agent/base/log.hpp"
#include "agent/kubelet/dra_service.hpp"
#include "agent/kubelet/grpc_services.hpp"
#include "agent/kubelet/rpc_bridge.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace nvdra::kubelet {
namespace {

// The service names kubelet matches in supported_versions (§2.1): the DRA entries are short forms,
// the health entries are the real gRPC service names. Kubelet takes the first DRA entry it knows.
const std::vector<std::string> kDraVersions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
const std::vector<std::string> kHealthVersions = {"v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"};

// Binds under a hidden sibling name (kubelet ignores names starting with '.'), sets the mode, then
// renames into place: the socket appears at its real name already listening and never more open
// than 0750. A path too long for the staging name is bound directly and chmod-ed.
std::unique_ptr<grpc::Server> listen_unix(const std::string& path, const std::vector<grpc::Service*>& services) {
  const fs::path final_path(path);
  socket_file::ensure_dir(final_path.parent_path().string());
  socket_file::remove_stale(path);
  const std::string staging = (final_path.parent_path() / ("." + final_path.filename().string() + ".staging")).string();
  const bool staged = staging.size() <= kMaxSocketPath;
  const std::string bind_path = staged ? staging : path;
  if (staged) socket_file::remove_stale(staging);

  grpc::ServerBuilder builder;
  // No grpc.health.v1 here, even when --healthcheck-port switched grpc++'s default one on for the
  // process: kubelet does not ask on these sockets, and upstream serves none there.
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  builder.AddListeningPort("unix:" + bind_path, grpc::InsecureServerCredentials());
  // kubelet keeps one connection per plugin for as long as the plugin is registered, idle for hours
  // (kubernetes #133920): keepalive pings on it, with or without calls, are welcome. grpc's default
  // policy answers a third ping within 5 minutes without calls with GOAWAY (too_many_pings), which
  // drops the connection kubelet's health stream and next prepare rely on.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);  // 0: never GOAWAY for pings
  for (auto* s : services) builder.RegisterService(s);
  auto server = builder.BuildAndStart();
  if (!server) throw std::runtime_error("cannot listen on unix socket " + bind_path + " (gRPC refused the address)");
  auto fail = [&](const std::string& what) {
    const int err = errno;
    server->Shutdown(std::chrono::system_clock::now());
    (void)socket_file::remove(bind_path);
    throw std::runtime_error(what + ": " + std::strerror(err));
  };
  if (::chmod(bind_path.c_str(), 0750) != 0) fail("cannot set mode 0750 on socket " + bind_path);
  if (staged && ::rename(bind_path.c_str(), path.c_str()) != 0) fail("cannot move socket " + bind_path + " to " + path);
  return server;
}

}  // namespace

struct PluginServer::Impl {
  Impl(asio::any_io_executor ex, PluginServerConfig cfg, ClaimHandler& claims, HealthSource* health_source)
      : ex(ex),
        config(std::move(cfg)),
        paths(socket_paths(config.driver_name, config.registrar_dir, config.plugin_data_dir, config.rolling_update_uid)),
        dra(ex, claims, config.driver_name),
        health(health_source),
        log(nvdra::logger("kubelet")) {}

  void notified(bool registered, std::string error);

  asio::any_io_executor ex;
  PluginServerConfig config;
  SocketPaths paths;
  DraService dra;
  HealthSource* health;
  std::shared_ptr<spdlog::logger> log;
  rpc::CallTracker dra_calls;
  rpc::CallTracker registration_calls;
  std::vector<std::unique_ptr<grpc::Service>> dra_services;
  std::unique_ptr<grpc::Service> registration_service;
  std::unique_ptr<grpc::Server> dra_server;
  std::unique_ptr<grpc::Server> registration_server;
  RegistrationStatus status;
  std::vector<std::function<void(const RegistrationStatus&)>> listeners;
  std::thread shutdown_thread;
  bool stopped = false;
};

void PluginServer::Impl::notified(bool registered, std::string error) {
  if (registered) {
    status.state = RegistrationState::kRegistered;
    status.error.clear();
    log->info("driver={} registered with kubelet endpoint={}", config.driver_name, paths.dra);
  } else {
    status.state = RegistrationState::kRejected;
    status.error = std::move(error);
    ++status.rejections;
    log->error("driver={} registration rejected by kubelet (attempt {}): {}", config.driver_name, status.rejections,
               status.error);
  }
  for (auto& fn : listeners) fn(status);
}

PluginServer::PluginServer(asio::any_io_executor ex, PluginServerConfig config, ClaimHandler& claims,
                           HealthSource* health)
    : impl_(std::make_unique<Impl>(ex, std::move(config), claims, health)) {}

PluginServer::~PluginServer() {
  if (impl_->shutdown_thread.joinable()) {
    // stop() was abandoned (the loop stopped under it): the thread still uses the servers, so they
    // are leaked rather than destroyed under it. Only reachable when shutdown overran its deadline.
    impl_->shutdown_thread.detach();
    (void)impl_->dra_server.release();
    (void)impl_->registration_server.release();
    for (auto& s : impl_->dra_services) (void)s.release();
    (void)impl_->registration_service.release();
  }
}

void PluginServer::start() {
  auto& i = *impl_;
  i.dra_services.push_back(make_dra_v1_service(i.ex, i.dra_calls, i.dra));
  i.dra_services.push_back(make_dra_v1beta1_service(i.ex, i.dra_calls, i.dra));
  if (i.health) {
    i.dra_services.push_back(make_health_v1_service(i.ex, i.dra_calls, *i.health, i.config.health_resend));
    i.dra_services.push_back(make_health_v1alpha1_service(i.ex, i.dra_calls, *i.health, i.config.health_resend));
  }
  std::vector<grpc::Service*> raw;
  for (auto& s : i.dra_services) raw.push_back(s.get());
  i.dra_server = listen_unix(i.paths.dra, raw);

  i.registration_service = make_registration_service(
      i.ex, i.registration_calls, PluginInfo{i.config.driver_name, i.paths.dra, supported_versions()},
      [impl = &i](bool registered, std::string error) { impl->notified(registered, std::move(error)); });
  i.registration_server = listen_unix(i.paths.registration, {i.registration_service.get()});
  i.log->info("driver={} serving dra={} registration={} versions={}", i.config.driver_name, i.paths.dra,
              i.paths.registration, fmt::join(supported_versions(), ","));
}

asio::awaitable<void> PluginServer::stop() {
  auto& i = *impl_;
  if (i.stopped) co_return;
  i.stopped = true;
  // Cleanup must run to the end even if the caller is cancelled again meanwhile.
  const bool threw_if_cancelled = co_await asio::this_coro::throw_if_cancelled();
  co_await asio::this_coro::throw_if_cancelled(false);
  i.dra_calls.close_and_cancel_all();
  i.registration_calls.close_and_cancel_all();

  auto ex = co_await asio::this_coro::executor;
  auto done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  auto finished = std::make_shared<bool>(false);
  i.shutdown_thread = std::thread([&i, done, finished, ex] {
    // An immediate deadline: anything still running is cancelled, then Shutdown waits for the
    // reactors, which finish on the loop that is free while we wait here.
    if (i.dra_server) i.dra_server->Shutdown(std::chrono::system_clock::now());
    if (i.registration_server) i.registration_server->Shutdown(std::chrono::system_clock::now());
    asio::post(ex, [done, finished] {
      *finished = true;
      done->cancel();
    });
  });
  while (!*finished) co_await done->async_wait(asio::as_tuple(asio::use_awaitable));
  i.shutdown_thread.join();

  // The DRA socket first: the registration socket's removal is what makes kubelet deregister.
  for (const auto* path : {&i.paths.dra, &i.paths.registration}) {
    if (auto err = socket_file::remove(*path); !err.empty()) i.log->warn("{}, ignoring", err);
  }
  i.log->info("driver={} stopped serving", i.config.driver_name);
  co_await asio::this_coro::throw_if_cancelled(threw_if_cancelled);
}

const SocketPaths& PluginServer::paths() const { return impl_->paths; }

std::vector<std::string> PluginServer::supported_versions() const {
  auto out = kDraVersions;
  if (impl_->health) out.insert(out.end(), kHealthVersions.begin(), kHealthVersions.end());
  return out;
}

const RegistrationStatus& PluginServer::registration() const { return impl_->status; }

void PluginServer::on_registration(std::function<void(const RegistrationStatus&)> fn) {
  impl_->listeners.push_back(std::move(fn));
}

boost::asio::awaitable<UnprepareResults> PluginServer::unprepare(std::vector<ClaimRef> claims) {
  co_return co_await impl_->dra.unprepare(std::move(claims));
}

std::size_t PluginServer::live_calls() const { return impl_->dra_calls.live() + impl_->registration_calls.live(); }

}  // namespace nvdra::kubelet
