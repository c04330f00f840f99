#pragma once
// Factories for the gRPC services a driver serves: DRA v1/v1beta1 and resource health
// v1/v1alpha1 on the DRA socket, plugin registration on the registration socket. Internal to
// agent/kubelet (PluginServer wires them); the services run their work on `ex` through rpc_bridge.
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace grpc { class Service; }

namespace nvdra::kubelet {

class DraService;
class HealthSource;
namespace rpc { class CallTracker; }

std::unique_ptr<grpc::Service> make_dra_v1_service(boost::asio::any_io_executor ex, rpc::CallTracker& calls,
                                                   DraService& dra);
std::unique_ptr<grpc::Service> make_dra_v1beta1_service(boost::asio::any_io_executor ex, rpc::CallTracker& calls,
                                                        DraService& dra);

// A stream re-sends the full report at least every `resend` (and before every device's own
// timeout) so kubelet never marks a quiet device Unknown.
std::unique_ptr<grpc::Service> make_health_v1_service(boost::asio::any_io_executor ex, rpc::CallTracker& calls,
                                                      HealthSource& source, std::chrono::seconds resend);
std::unique_ptr<grpc::Service> make_health_v1alpha1_service(boost::asio::any_io_executor ex, rpc::CallTracker& calls,
                                                            HealthSource& source, std::chrono::seconds resend);

struct PluginInfo {
  std::string driver_name;
  std::string endpoint;  // absolute path of the DRA socket
  std::vector<std::string> supported_versions;
};
// `notified(registered, error)` runs on the io_context thread for each NotifyRegistrationStatus.
std::unique_ptr<grpc::Service> make_registration_service(boost::asio::any_io_executor ex, rpc::CallTracker& calls,
                                                         PluginInfo info,
                                                         std::function<void(bool, std::string)> notified);

}  // namespace nvdra::kubelet
