// DRAResourceHealth v1 and v1alpha1 (identical messages, different packages): a server stream that
// sends the complete report at once, after every change, and again before kubelet's staleness
// timeout (../shared/reference/kubelet-dra-protocol.md §4.8).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "agent/base/utf8.hpp"
#include "agent/kubelet/grpc_services.hpp"
#include "agent/kubelet/health_source.hpp"
#include "agent/kubelet/proto/health_v1.grpc.pb.h"
#include "agent/kubelet/proto/health_v1alpha1.grpc.pb.h"
#include "agent/kubelet/rpc_bridge.hpp"

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;

namespace nvdra::kubelet {
namespace {

constexpr std::size_t kMaxMessage = 1024;  // kubelet cuts longer ones itself; we send what it keeps
constexpr int64_t kKubeletDefaultTimeout = 30;

template <class Response>
Response to_proto(const HealthSnapshot& snap) {
  Response out;
  for (const auto& d : snap.devices) {
    auto* h = out.add_devices();
    h->mutable_device()->set_pool_name(d.pool_name);
    h->mutable_device()->set_device_name(d.device_name);
    // Wire values of HealthStatus: UNKNOWN = 0, HEALTHY = 1, UNHEALTHY = 2 (§1.4).
    using WireHealth = decltype(h->health());
    h->set_health(static_cast<WireHealth>(d.health == Health::kHealthy ? 1 : d.health == Health::kUnhealthy ? 2 : 0));
    h->set_last_updated_time(d.last_updated_unix);
    h->set_health_check_timeout_seconds(std::max<int64_t>(d.timeout_seconds, 0));
    // Cut between characters: a proto3 string that is not UTF-8 fails to parse on kubelet's side.
    if (d.message.size() > kMaxMessage) h->set_message(truncate_utf8(d.message, kMaxMessage - 3) + "...");
    else h->set_message(d.message);
  }
  return out;
}

// Half the smallest per-device timeout, so one lost tick never lets a device go stale.
std::chrono::seconds resend_interval(const HealthSnapshot& snap, std::chrono::seconds cap) {
  int64_t smallest = kKubeletDefaultTimeout;
  for (const auto& d : snap.devices)
    if (d.timeout_seconds > 0) smallest = std::min(smallest, d.timeout_seconds);
  return std::clamp(std::chrono::seconds(smallest / 2), std::chrono::seconds(1), cap);
}

template <class Response>
asio::awaitable<grpc::Status> watch(HealthSource* source, std::shared_ptr<rpc::StreamWriter<Response>> writer,
                                    std::chrono::seconds cap) {
  auto ex = co_await asio::this_coro::executor;
  auto snap = source->snapshot();
  for (;;) {
    if (!co_await writer->write(to_proto<Response>(snap)))
      co_return grpc::Status(grpc::StatusCode::CANCELLED, "health stream closed by the client");
    asio::steady_timer resend(ex, resend_interval(snap, cap));
    auto next = co_await (source->watch(snap.generation) || resend.async_wait(asio::use_awaitable));
    snap = next.index() == 0 ? std::get<0>(std::move(next)) : source->snapshot();
  }
}

template <class Service, class Request, class Response>
class HealthGrpcService final : public Service::CallbackService {
 public:
  HealthGrpcService(asio::any_io_executor ex, rpc::CallTracker& calls, HealthSource& source, std::chrono::seconds cap)
      : ex_(std::move(ex)), calls_(calls), source_(source), cap_(cap) {}

  grpc::ServerWriteReactor<Response>* NodeWatchResources(grpc::CallbackServerContext*, const Request*) override {
    return rpc::serve_stream<Response>(ex_, calls_, [source = &source_, cap = cap_](auto writer) {
      return watch<Response>(source, std::move(writer), cap);
    });
  }

 private:
  asio::any_io_executor ex_;
  rpc::CallTracker& calls_;
  HealthSource& source_;
  std::chrono::seconds cap_;
};

}  // namespace

std::unique_ptr<grpc::Service> make_health_v1_service(asio::any_io_executor ex, rpc::CallTracker& calls,
                                                      HealthSource& source, std::chrono::seconds resend) {
  return std::make_unique<HealthGrpcService<v1::DRAResourceHealth, v1::NodeWatchResourcesRequest,
                                            v1::NodeWatchResourcesResponse>>(std::move(ex), calls, source, resend);
}

std::unique_ptr<grpc::Service> make_health_v1alpha1_service(asio::any_io_executor ex, rpc::CallTracker& calls,
                                                            HealthSource& source, std::chrono::seconds resend) {
  return std::make_unique<HealthGrpcService<v1alpha1::DRAResourceHealth, v1alpha1::NodeWatchResourcesRequest,
                                            v1alpha1::NodeWatchResourcesResponse>>(std::move(ex), calls, source,
                                                                                   resend);
}

}  // namespace nvdra::kubelet
