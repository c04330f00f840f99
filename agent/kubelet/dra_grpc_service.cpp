// DRAPlugin v1 and v1beta1: the same code over two generated APIs. Conversion is field by field;
// v1beta1 has no share_id (../shared/reference/kubelet-dra-protocol.md §1.3).
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>

#include "agent/kubelet/dra_service.hpp"
#include "agent/kubelet/grpc_services.hpp"
#include "agent/kubelet/proto/dra_v1.grpc.pb.h"
#include "agent/kubelet/proto/dra_v1beta1.grpc.pb.h"
#include "agent/kubelet/rpc_bridge.hpp"

namespace asio = boost::asio;

namespace nvdra::kubelet {
namespace {

template <class Ns, bool kShareId>
struct Api {
  using Service = typename Ns::DRAPlugin;
  using PrepareRequest = typename Ns::NodePrepareResourcesRequest;
  using PrepareResponse = typename Ns::NodePrepareResourcesResponse;
  using UnprepareRequest = typename Ns::NodeUnprepareResourcesRequest;
  using UnprepareResponse = typename Ns::NodeUnprepareResourcesResponse;
  static constexpr bool kHasShareId = kShareId;
};
struct V1Ns {
  using DRAPlugin = k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin;
  using NodePrepareResourcesRequest = k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse;
};
struct V1beta1Ns {
  using DRAPlugin = k8s::io::kubelet::pkg::apis::dra::v1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse;
};

// The call's deadline on the steady clock (grpc++ gives it on the system clock; "none" is its max).
std::optional<std::chrono::steady_clock::time_point> call_deadline(const grpc::CallbackServerContext* ctx) {
  const auto at = ctx->deadline();
  if (at == std::chrono::system_clock::time_point::max()) return std::nullopt;
  const auto left = std::chrono::duration_cast<std::chrono::steady_clock::duration>(at - std::chrono::system_clock::now());
  return std::chrono::steady_clock::now() + left;
}

template <class Claims>
std::vector<ClaimRef> to_refs(const Claims& claims,
                              std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt) {
  std::vector<ClaimRef> refs;
  refs.reserve(claims.size());
  for (const auto& c : claims) refs.push_back(ClaimRef{c.namespace_(), c.name(), c.uid(), deadline});
  return refs;
}

template <class A>
asio::awaitable<grpc::Status> prepare(DraService* dra, const typename A::PrepareRequest* request,
                                      typename A::PrepareResponse* response,
                                      std::optional<std::chrono::steady_clock::time_point> deadline) {
  auto claims = to_refs(request->claims(), deadline);
  if (auto bad = DraService::validate(claims)) co_return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *bad);
  auto results = co_await dra->prepare(std::move(claims));
  auto& out = *response->mutable_claims();
  for (auto& [uid, outcome] : results) {
    auto& entry = out[uid];  // always a value message, even when empty (§1)
    if (!outcome.error.empty()) {
      entry.set_error(outcome.error);
      continue;
    }
    for (const auto& d : outcome.devices) {
      auto* device = entry.add_devices();
      for (const auto& r : d.request_names) device->add_request_names(r);
      device->set_pool_name(d.pool_name);
      device->set_device_name(d.device_name);
      for (const auto& id : d.cdi_device_ids) device->add_cdi_device_ids(id);
      if constexpr (A::kHasShareId)
        if (d.share_id) device->set_share_id(*d.share_id);
    }
  }
  co_return grpc::Status::OK;
}

template <class A>
asio::awaitable<grpc::Status> unprepare(DraService* dra, const typename A::UnprepareRequest* request,
                                        typename A::UnprepareResponse* response) {
  auto claims = to_refs(request->claims());
  if (auto bad = DraService::validate(claims)) co_return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *bad);
  auto results = co_await dra->unprepare(std::move(claims));
  auto& out = *response->mutable_claims();
  for (auto& [uid, error] : results) out[uid].set_error(error);
  co_return grpc::Status::OK;
}

template <class A>
class DraGrpcService final : public A::Service::CallbackService {
 public:
  DraGrpcService(asio::any_io_executor ex, rpc::CallTracker& calls, DraService& dra)
      : ex_(std::move(ex)), calls_(calls), dra_(dra) {}

  grpc::ServerUnaryReactor* NodePrepareResources(grpc::CallbackServerContext* ctx,
                                                 const typename A::PrepareRequest* request,
                                                 typename A::PrepareResponse* response) override {
    return rpc::serve_unary(ex_, calls_, [dra = &dra_, request, response, deadline = call_deadline(ctx)] {
      return prepare<A>(dra, request, response, deadline);
    });
  }

  grpc::ServerUnaryReactor* NodeUnprepareResources(grpc::CallbackServerContext*,
                                                   const typename A::UnprepareRequest* request,
                                                   typename A::UnprepareResponse* response) override {
    return rpc::serve_unary(ex_, calls_,
                            [dra = &dra_, request, response] { return unprepare<A>(dra, request, response); });
  }

 private:
  asio::any_io_executor ex_;
  rpc::CallTracker& calls_;
  DraService& dra_;
};

}  // namespace

std::unique_ptr<grpc::Service> make_dra_v1_service(asio::any_io_executor ex, rpc::CallTracker& calls, DraService& dra) {
  return std::make_unique<DraGrpcService<Api<V1Ns, true>>>(std::move(ex), calls, dra);
}

std::unique_ptr<grpc::Service> make_dra_v1beta1_service(asio::any_io_executor ex, rpc::CallTracker& calls,
                                                        DraService& dra) {
  return std::make_unique<DraGrpcService<Api<V1beta1Ns, false>>>(std::move(ex), calls, dra);
}

}  // namespace nvdra::kubelet
