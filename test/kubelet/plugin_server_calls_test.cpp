// How calls run: concurrently, cancellable by the client, its deadline and shutdown, with nothing
// left behind (live handler coroutines are counted); and the resource-health stream.
#include <atomic>
#include <thread>

#include "test/kubelet/plugin_fixture.hpp"

namespace nvdra::kubelet::testing {
namespace {

using PluginCallsTest = PluginFixture;

TEST_F(PluginCallsTest, SixtyFourPrepareCallsForDifferentClaimsAreAllInFlightAtOnce) {
  constexpr int kCalls = 64;
  loop_.sync([&] {
    claims_.hold_until_in_flight(kCalls);  // no call can finish until all 64 are being worked on
    for (int i = 0; i < kCalls; ++i) claims_.know("uid-" + std::to_string(i), {});
  });
  start();
  std::atomic<int> ok{0};
  std::vector<std::thread> kubelets;
  for (int i = 0; i < kCalls; ++i) {
    kubelets.emplace_back([&, i] {
      drav1::NodePrepareResourcesRequest request;
      add_claim(request, "uid-" + std::to_string(i));
      drav1::NodePrepareResourcesResponse response;
      auto ctx = context();
      if (dra_v1()->NodePrepareResources(ctx.get(), request, &response).ok() &&
          response.claims().at("uid-" + std::to_string(i)).error().empty())
        ++ok;
    });
  }
  for (auto& t : kubelets) t.join();
  EXPECT_EQ(ok.load(), kCalls);
  EXPECT_EQ(claims_.max_in_flight.load(), kCalls);
}

TEST_F(PluginCallsTest, ManyClaimsInOneCallAreWorkedOnConcurrently) {
  constexpr int kClaims = 16;
  loop_.sync([&] { claims_.hold_until_in_flight(kClaims); });
  start();
  drav1::NodePrepareResourcesRequest request;
  for (int i = 0; i < kClaims; ++i) add_claim(request, "uid-" + std::to_string(i));
  drav1::NodePrepareResourcesResponse response;
  auto ctx = context();
  ASSERT_TRUE(dra_v1()->NodePrepareResources(ctx.get(), request, &response).ok());
  EXPECT_EQ(response.claims().size(), static_cast<std::size_t>(kClaims));
  EXPECT_EQ(claims_.max_in_flight.load(), kClaims);
}

TEST_F(PluginCallsTest, AHandlerSeesTheCallsDeadlineOnTheSteadyClockAndNoneWhenTheClientSetNone) {
  loop_.sync([&] { claims_.know("uid-a", {}); });
  start();
  drav1::NodePrepareResourcesRequest request;
  add_claim(request, "uid-a");
  drav1::NodePrepareResourcesResponse response;
  const auto before = std::chrono::steady_clock::now();
  auto with_deadline = context(std::chrono::seconds(20));
  ASSERT_TRUE(dra_v1()->NodePrepareResources(with_deadline.get(), request, &response).ok());
  grpc::ClientContext without_deadline;
  ASSERT_TRUE(dra_v1()->NodePrepareResources(&without_deadline, request, &response).ok());
  std::vector<std::optional<std::chrono::steady_clock::time_point>> seen;
  loop_.sync([&] { seen = claims_.deadlines; });
  ASSERT_EQ(seen.size(), 2u);
  ASSERT_TRUE(seen[0].has_value());
  EXPECT_GT(*seen[0], before);
  EXPECT_FALSE(seen[1].has_value());
}

TEST_F(PluginCallsTest, AClientCancelEndsTheHandlerCoroutine) {
  loop_.sync([&] { claims_.hang(); });
  start();
  grpc::ClientContext ctx;
  drav1::NodePrepareResourcesRequest request;
  add_claim(request, "uid-a");
  drav1::NodePrepareResourcesResponse response;
  grpc::Status status;
  std::thread kubelet([&] { status = dra_v1()->NodePrepareResources(&ctx, request, &response); });
  ASSERT_TRUE(wait_until([&] { return claims_.live.load() == 1; }));
  ctx.TryCancel();
  kubelet.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(wait_until([&] { return claims_.live.load() == 0 && server_->live_calls() == 0; }))
      << "live handlers=" << claims_.live.load() << " live calls=" << server_->live_calls();
}

TEST_F(PluginCallsTest, AnExpiredDeadlineEndsTheHandlerCoroutine) {
  loop_.sync([&] { claims_.hang(); });
  start();
  drav1beta1::NodeUnprepareResourcesRequest request;
  add_claim(request, "uid-a");
  add_claim(request, "uid-b");
  drav1beta1::NodeUnprepareResourcesResponse response;
  auto ctx = context(std::chrono::milliseconds(300));
  const auto status = dra_v1beta1()->NodeUnprepareResources(ctx.get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(wait_until([&] { return claims_.live.load() == 0 && server_->live_calls() == 0; }))
      << "live handlers=" << claims_.live.load() << " live calls=" << server_->live_calls();
}

TEST_F(PluginCallsTest, StopCancelsInFlightCallsAndLeavesNothingRunning) {
  loop_.sync([&] { claims_.hang(); });
  start();
  drav1::NodePrepareResourcesRequest request;
  add_claim(request, "uid-a");
  drav1::NodePrepareResourcesResponse response;
  grpc::Status status;
  std::thread kubelet([&] {
    auto ctx = context();
    status = dra_v1()->NodePrepareResources(ctx.get(), request, &response);
  });
  ASSERT_TRUE(wait_until([&] { return claims_.live.load() == 1; }));
  stop();
  kubelet.join();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(claims_.live.load(), 0);
  EXPECT_EQ(server_->live_calls(), 0u);
}

template <class Api>
void health_stream_reports_at_once_and_on_change(PluginFixture& f, LoopThread& loop, FakeHealthSource& health,
                                                  PluginServer& server, const std::shared_ptr<grpc::Channel>& ch) {
  loop.sync([&] {
    health.set({DeviceHealth{"node-1", "gpu-0", Health::kHealthy, 100, 0, ""},
                DeviceHealth{"node-1", "gpu-1", Health::kHealthy, 100, 60, ""}});
  });
  auto stub = Api::DRAResourceHealth::NewStub(ch);
  grpc::ClientContext ctx;
  auto reader = stub->NodeWatchResources(&ctx, typename Api::NodeWatchResourcesRequest{});
  typename Api::NodeWatchResourcesResponse report;
  ASSERT_TRUE(reader->Read(&report));
  ASSERT_EQ(report.devices_size(), 2);
  EXPECT_EQ(report.devices(0).device().device_name(), "gpu-0");
  EXPECT_EQ(report.devices(0).health(), Api::HEALTHY);
  EXPECT_EQ(report.devices(1).health_check_timeout_seconds(), 60);

  loop.sync([&] {
    health.set({DeviceHealth{"node-1", "gpu-0", Health::kUnhealthy, 200, 0, "XID 79: " + std::string(2000, 'x')},
                DeviceHealth{"node-1", "gpu-1", Health::kHealthy, 200, 60, ""}});
  });
  ASSERT_TRUE(reader->Read(&report));
  EXPECT_EQ(report.devices(0).health(), Api::UNHEALTHY);
  EXPECT_EQ(report.devices(0).last_updated_time(), 200);
  EXPECT_EQ(report.devices(0).message().size(), 1024u);  // kubelet's limit, ending in "..."
  EXPECT_EQ(report.devices(0).message().substr(1021), "...");

  // A character the cut would split goes whole: the message stays UTF-8, as a proto3 string must.
  loop.sync([&] {
    health.set({DeviceHealth{"node-1", "gpu-0", Health::kUnhealthy, 300, 0,
                             std::string(1020, 'x') + "\xC4\x90" + std::string(10, 'y')},
                DeviceHealth{"node-1", "gpu-1", Health::kHealthy, 300, 60, ""}});
  });
  ASSERT_TRUE(reader->Read(&report));
  EXPECT_EQ(report.devices(0).message(), std::string(1020, 'x') + "...");

  ctx.TryCancel();
  EXPECT_FALSE(reader->Read(&report));
  reader->Finish();
  EXPECT_TRUE(wait_until([&] { return server.live_calls() == 0; })) << "live calls=" << server.live_calls();
  (void)f;
}

struct HealthV1 {
  using DRAResourceHealth = v1::DRAResourceHealth;
  using NodeWatchResourcesRequest = v1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = v1::NodeWatchResourcesResponse;
  static constexpr auto HEALTHY = v1::HEALTHY;
  static constexpr auto UNHEALTHY = v1::UNHEALTHY;
};
struct HealthV1alpha1 {
  using DRAResourceHealth = v1alpha1::DRAResourceHealth;
  using NodeWatchResourcesRequest = v1alpha1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = v1alpha1::NodeWatchResourcesResponse;
  static constexpr auto HEALTHY = v1alpha1::HEALTHY;
  static constexpr auto UNHEALTHY = v1alpha1::UNHEALTHY;
};

TEST_F(PluginCallsTest, HealthV1StreamSendsTheFullReportAtOnceThenEveryChange) {
  start();
  health_stream_reports_at_once_and_on_change<HealthV1>(*this, loop_, health_, *server_, channel(server_->paths().dra));
}

TEST_F(PluginCallsTest, HealthV1alpha1StreamSendsTheFullReportAtOnceThenEveryChange) {
  start();
  health_stream_reports_at_once_and_on_change<HealthV1alpha1>(*this, loop_, health_, *server_,
                                                              channel(server_->paths().dra));
}

TEST_F(PluginCallsTest, HealthIsUnimplementedWithoutAHealthSourceAsUpstream) {
  start(/*with_health=*/false);
  auto stub = v1alpha1::DRAResourceHealth::NewStub(channel(server_->paths().dra));
  grpc::ClientContext ctx;
  auto reader = stub->NodeWatchResources(&ctx, {});
  v1alpha1::NodeWatchResourcesResponse report;
  EXPECT_FALSE(reader->Read(&report));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(PluginCallsTest, StopEndsAnOpenHealthStream) {
  start();
  auto stub = v1::DRAResourceHealth::NewStub(channel(server_->paths().dra));
  grpc::ClientContext ctx;
  auto reader = stub->NodeWatchResources(&ctx, {});
  v1::NodeWatchResourcesResponse report;
  ASSERT_TRUE(reader->Read(&report));  // the (empty) first report
  stop();
  EXPECT_FALSE(reader->Read(&report));
  EXPECT_FALSE(reader->Finish().ok());
  EXPECT_EQ(server_->live_calls(), 0u);
}

}  // namespace
}  // namespace nvdra::kubelet::testing
