// Latency of a prepare round trip over the DRA unix socket: kubelet's client (sync grpc++ stub)
// → PluginServer → io_context coroutine → ClaimHandler → reply. Prints p50/p90/p99/max for an empty
// request (upstream's liveness probe) and for one claim answered at once by the handler.
// Usage: kubelet_prepare_round_trip [iterations]   (numbers go to the notes, never into tests)
#include <grpcpp/grpcpp.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/co_spawn.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "agent/kubelet/claim_handler.hpp"
#include "agent/kubelet/plugin_server.hpp"
#include "agent/kubelet/proto/dra_v1.grpc.pb.h"

namespace asio = boost::asio;
namespace dra = k8s::io::kubelet::pkg::apis::dra::v1;
using nvdra::kubelet::ClaimRef;
using nvdra::kubelet::PreparedDevice;

namespace {

class InstantHandler final : public nvdra::kubelet::ClaimHandler {
 public:
  asio::awaitable<nvdra::Result<std::vector<PreparedDevice>>> prepare(ClaimRef) override {
    co_return std::vector<PreparedDevice>{
        PreparedDevice{{"gpu"}, "node-1", "gpu-0", {"k8s.gpu.nvidia.com/device=gpu-0"}, std::nullopt}};
  }
  asio::awaitable<nvdra::Status> unprepare(ClaimRef) override { co_return nvdra::Status{}; }
};

void report(const char* what, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<std::size_t>(q * us.size()))]; };
  std::printf("%-28s n=%zu  p50=%.1f us  p90=%.1f us  p99=%.1f us  max=%.1f us\n", what, us.size(), at(0.50),
              at(0.90), at(0.99), us.back());
}

template <class Fill>
std::vector<double> measure(dra::DRAPlugin::Stub& stub, int n, Fill fill) {
  std::vector<double> us;
  dra::NodePrepareResourcesRequest request;
  fill(request);
  for (int i = 0; i < n + n / 10; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(45));
    dra::NodePrepareResourcesResponse response;
    const auto t0 = std::chrono::steady_clock::now();
    const auto status = stub.NodePrepareResources(&ctx, request, &response);
    const auto t1 = std::chrono::steady_clock::now();
    if (!status.ok()) {
      std::fprintf(stderr, "prepare failed: %s\n", status.error_message().c_str());
      std::exit(1);
    }
    if (i >= n / 10) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());  // after warm-up
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 5000;
  char tmpl[] = "/tmp/nvdra-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string root = tmpl;

  asio::io_context io(1);
  auto work = asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });
  InstantHandler handler;
  nvdra::kubelet::PluginServer server(io.get_executor(),
                                      {"gpu.nvidia.com", root + "/reg", root + "/plugins/gpu.nvidia.com", ""},
                                      handler, nullptr);
  server.start();
  auto stub = dra::DRAPlugin::NewStub(
      grpc::CreateChannel("unix:" + server.paths().dra, grpc::InsecureChannelCredentials()));

  report("empty prepare (v1)", measure(*stub, n, [](auto&) {}));
  report("one-claim prepare (v1)", measure(*stub, n, [](auto& r) {
           auto* c = r.add_claims();
           c->set_namespace_("default");
           c->set_name("claim");
           c->set_uid("uid-1");
         }));

  std::promise<void> stopped;
  asio::co_spawn(io, server.stop(), [&](std::exception_ptr) { stopped.set_value(); });
  stopped.get_future().get();
  work.reset();
  loop.join();
  std::filesystem::remove_all(root);
  return 0;
}
