// pluginregistration.Registration: GetInfo answers from fixed data; NotifyRegistrationStatus is
// handed to the io_context, where readiness and status live. Like the upstream helper, a rejection
// is answered with an error "failed registration process: <reason>" (§2.3).
#include <boost/asio/awaitable.hpp>

#include "agent/kubelet/grpc_services.hpp"
#include "agent/kubelet/proto/registration.grpc.pb.h"
#include "agent/kubelet/rpc_bridge.hpp"

namespace asio = boost::asio;

namespace nvdra::kubelet {
namespace {

constexpr const char* kDraPluginType = "DRAPlugin";

asio::awaitable<grpc::Status> notify(const std::function<void(bool, std::string)>* notified,
                                     const pluginregistration::RegistrationStatus* status) {
  (*notified)(status->plugin_registered(), status->error());
  if (!status->plugin_registered())
    co_return grpc::Status(grpc::StatusCode::UNKNOWN, "failed registration process: " + status->error());
  co_return grpc::Status::OK;
}

class RegistrationGrpcService final : public pluginregistration::Registration::CallbackService {
 public:
  RegistrationGrpcService(asio::any_io_executor ex, rpc::CallTracker& calls, PluginInfo info,
                          std::function<void(bool, std::string)> notified)
      : ex_(std::move(ex)), calls_(calls), info_(std::move(info)), notified_(std::move(notified)) {}

  // Kubelet gives GetInfo one second; the answer is fixed, so it never leaves the gRPC thread.
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context, const pluginregistration::InfoRequest*,
                                    pluginregistration::PluginInfo* reply) override {
    reply->set_type(kDraPluginType);
    reply->set_name(info_.driver_name);
    reply->set_endpoint(info_.endpoint);
    for (const auto& v : info_.supported_versions) reply->add_supported_versions(v);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* NotifyRegistrationStatus(grpc::CallbackServerContext*,
                                                     const pluginregistration::RegistrationStatus* status,
                                                     pluginregistration::RegistrationStatusResponse*) override {
    return rpc::serve_unary(ex_, calls_, [notified = &notified_, status] { return notify(notified, status); });
  }

 private:
  asio::any_io_executor ex_;
  rpc::CallTracker& calls_;
  PluginInfo info_;
  std::function<void(bool, std::string)> notified_;
};

}  // namespace

std::unique_ptr<grpc::Service> make_registration_service(asio::any_io_executor ex, rpc::CallTracker& calls,
                                                         PluginInfo info,
                                                         std::function<void(bool, std::string)> notified) {
  return std::make_unique<RegistrationGrpcService>(std::move(ex), calls, std::move(info), std::move(notified));
}

}  // namespace nvdra::kubelet
