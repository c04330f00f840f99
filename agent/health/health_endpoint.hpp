#pragma once
// HealthEndpoint — the standard grpc.health.v1.Health service (Check and Watch) on a TCP port, what
// kubelet's gRPC probes and upstream's --healthcheck-port speak (upstream-driver.md §8.3). It is
// grpc++'s own DefaultHealthCheckService, listening on all interfaces; this class only picks the
// port, starts every named service NOT_SERVING and lets the owner switch them. A name that was
// never set answers Check with NOT_FOUND and Watch with SERVICE_UNKNOWN, as grpc++ does.
//
// Life cycle: enable_default_service() once before any gRPC server of the process is built (it is a
// process-wide grpc++ switch; the agent's unix-socket servers opt out of it), start() on the worker
// pool, set() from any thread, stop() on the worker pool before destruction (Shutdown waits for
// in-flight calls, which grpc++ serves on its own threads, never on the io_context).
#include <memory>
#include <string>
#include <vector>

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace nvdra::health {

class HealthEndpoint {
 public:
  // `port`: 1…65535, or 0 for a free port chosen by the kernel (port() tells which).
  explicit HealthEndpoint(int port);
  ~HealthEndpoint();
  HealthEndpoint(const HealthEndpoint&) = delete;
  HealthEndpoint& operator=(const HealthEndpoint&) = delete;

  static void enable_default_service();

  // Blocking (binds the port). Every name in `services` starts NOT_SERVING, "" included. Throws
  // std::runtime_error naming the port when it cannot listen.
  void start(const std::vector<std::string>& services);
  int port() const { return bound_port_; }
  void set(const std::string& service, bool serving);
  // Blocking: every service goes NOT_SERVING (open Watch streams see it), then the server stops.
  // Idempotent; safe when start() never ran.
  void stop();

 private:
  int requested_port_;
  int bound_port_ = 0;
  std::unique_ptr<grpc::Service> filler_;  // see health_endpoint.cpp; outlives server_
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace nvdra::health
