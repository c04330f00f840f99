#include "agent/health/health_endpoint.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <stdexcept>

#include "agent/kubelet/proto/registration.grpc.pb.h"

namespace nvdra::health {
namespace {

// grpc++ 1.51 refuses to build a server whose only service is the default health service it adds
// itself in Start() ("At least one of the completion queues must be frequently polled"). A callback
// service with no method implemented satisfies it and changes nothing on the wire: its methods
// answer UNIMPLEMENTED, exactly as a method the server does not know.
class NothingElse final : public pluginregistration::Registration::CallbackService {};

}  // namespace

HealthEndpoint::HealthEndpoint(int port) : requested_port_(port), filler_(std::make_unique<NothingElse>()) {}

HealthEndpoint::~HealthEndpoint() { stop(); }

void HealthEndpoint::enable_default_service() { grpc::EnableDefaultHealthCheckService(true); }

void HealthEndpoint::start(const std::vector<std::string>& services) {
  if (!grpc::DefaultHealthCheckServiceEnabled())
    throw std::logic_error("HealthEndpoint::enable_default_service() was not called before start()");
  grpc::ServerBuilder builder;
  // grpc++ sets SO_REUSEPORT by default: a second agent would then share the port instead of being
  // refused, as Go's listener (upstream) is.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // "[::]" is every IPv6 and (dual-stack) IPv4 address, like Go's ":<port>" in upstream.
  builder.RegisterService(filler_.get());
  builder.AddListeningPort("[::]:" + std::to_string(requested_port_), grpc::InsecureServerCredentials(), &bound_port_);
  server_ = builder.BuildAndStart();
  if (!server_ || bound_port_ == 0) {
    server_.reset();
    throw std::runtime_error("cannot listen for gRPC health checks on TCP port " + std::to_string(requested_port_) +
                             " (in use, or not permitted)");
  }
  // grpc++ starts "" SERVING; nothing is known yet.
  auto* hc = server_->GetHealthCheckService();
  hc->SetServingStatus("", false);
  for (const auto& s : services) hc->SetServingStatus(s, false);
}

void HealthEndpoint::set(const std::string& service, bool serving) {
  if (server_) server_->GetHealthCheckService()->SetServingStatus(service, serving);
}

void HealthEndpoint::stop() {
  if (!server_) return;
  // NOT_SERVING for everything first, so open Watch streams hear it before they are cut. The write is
  // asynchronous: a short grace lets it go out before the streams a client left open are cancelled (with
  // an immediate deadline a slow run, e.g. under TSan, cut the stream first). Watches never end by
  // themselves, so stop() takes the grace whenever one is open: well inside the agent's 1 s for SIGTERM.
  server_->GetHealthCheckService()->Shutdown();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_.reset();
}

}  // namespace nvdra::health
