#include "agent/health/plugin_probe.hpp"

#include <grpcpp/grpcpp.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>

#include "agent/kubelet/proto/dra_v1beta1.grpc.pb.h"
#include "agent/kubelet/proto/registration.grpc.pb.h"

namespace asio = boost::asio;

namespace nvdra::health {
namespace {

namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

// Everything one call touches after it started, shared with gRPC's completion callback so that it
// outlives the call whatever happens to the awaiting coroutine.
template <class Stub, class Request, class Response>
struct Call {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<Stub> stub;
  grpc::ClientContext context;
  Request request;
  Response response;
};

// A channel with a subchannel pool of its own: channels to the same target otherwise share one
// connection process-wide, which would survive the socket file's removal.
std::shared_ptr<grpc::Channel> fresh_channel(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

// Runs one unary call. `start(call, done)` issues it through the stub's async() API; `done` hands
// gRPC's status back to the io_context. Cancelling the awaiting coroutine cancels the call.
template <class Stub, class Request, class Response, class Start>
asio::awaitable<grpc::Status> unary(std::shared_ptr<Call<Stub, Request, Response>> call, Start start) {
  auto ex = co_await asio::this_coro::executor;
  co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(grpc::Status)>(
      [ex, call, start = std::move(start)](auto handler) mutable {
        auto slot = asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected()) slot.assign([call](asio::cancellation_type) { call->context.TryCancel(); });
        // std::function needs a copyable callable; the handler is move-only.
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        // The callback gives its references to the io_context: gRPC destroys the callback on its own thread
        // after running it, and the last reference to the call (its context and channel) must not go there,
        // where it raced the plugin server's shutdown (a gRPC ref-count assertion, once in CI).
        start(*call, [ex, call, shared](grpc::Status status) mutable {
          asio::post(ex, [call = std::move(call), shared = std::move(shared), status = std::move(status)]() mutable {
            asio::get_associated_cancellation_slot(*shared).clear();
            std::move(*shared)(std::move(status));
          });
        });
      },
      asio::use_awaitable);
}

std::string failed(const char* what, const std::string& socket, const grpc::Status& s) {
  return std::string(what) + " on " + socket + " failed: code " + std::to_string(s.error_code()) + ": " +
         s.error_message();
}

}  // namespace

asio::awaitable<std::string> probe_plugin(kubelet::SocketPaths sockets, std::chrono::milliseconds deadline) {
  using Registration = pluginregistration::Registration;
  auto info = std::make_shared<Call<Registration::Stub, pluginregistration::InfoRequest, pluginregistration::PluginInfo>>();
  info->channel = fresh_channel(sockets.registration);
  info->stub = Registration::NewStub(info->channel);
  info->context.set_deadline(std::chrono::system_clock::now() + deadline);
  auto status = co_await unary(info, [](auto& c, std::function<void(grpc::Status)> done) {
    c.stub->async()->GetInfo(&c.context, &c.request, &c.response, std::move(done));
  });
  if (!status.ok()) co_return failed("GetInfo", sockets.registration, status);

  auto prepare = std::make_shared<Call<drav1beta1::DRAPlugin::Stub, drav1beta1::NodePrepareResourcesRequest,
                                       drav1beta1::NodePrepareResourcesResponse>>();
  prepare->channel = fresh_channel(sockets.dra);
  prepare->stub = drav1beta1::DRAPlugin::NewStub(prepare->channel);
  prepare->context.set_deadline(std::chrono::system_clock::now() + deadline);
  status = co_await unary(prepare, [](auto& c, std::function<void(grpc::Status)> done) {
    c.stub->async()->NodePrepareResources(&c.context, &c.request, &c.response, std::move(done));
  });
  if (!status.ok()) co_return failed("NodePrepareResources (v1beta1, no claims)", sockets.dra, status);
  co_return std::string();
}

}  // namespace nvdra::health
