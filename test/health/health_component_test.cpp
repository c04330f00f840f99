// HealthComponent: SERVING only while every driver is registered with kubelet and its plugin answers
// upstream's probe; NOT_SERVING when kubelet withdraws a registration (a failed
// NotifyRegistrationStatus) or a plugin's socket goes away. Real PluginServers on unix sockets, the
// component on its own loop, a grpc.health.v1 client on the TCP port.
#include "agent/health/health_component.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>

#include <filesystem>
#include <future>

#include "agent/runtime/worker_pool.hpp"
#include "test/health/health_client.hpp"
#include "test/kubelet/fake_claim_handler.hpp"
#include "test/kubelet/loop_thread.hpp"

namespace nvdra::health::testing {
namespace {

namespace asio = boost::asio;
using kubelet::RegistrationState;
using kubelet::testing::FakeClaimHandler;
using kubelet::testing::LoopThread;
using kubelet::testing::wait_until;

constexpr const char* kGpu = "gpu.nvidia.com";
constexpr const char* kCd = "compute-domain.nvidia.com";

class HealthComponentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvdra-hc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    for (const char* driver : {kGpu, kCd}) {
      auto server = std::make_unique<kubelet::PluginServer>(
          loop_.ex(),
          kubelet::PluginServerConfig{driver, root_ + "/registry", root_ + "/plugins/" + driver, ""}, claims_,
          nullptr);
      server->start();
      servers_.push_back(std::move(server));
    }
  }

  void TearDown() override {
    stop_component();
    for (auto& s : servers_) loop_.await(s->stop());
    std::filesystem::remove_all(root_);
  }

  // Starts the component with a recheck interval long enough that only recheck() drives it, unless
  // a test asks for the periodic one.
  void start_component(std::chrono::milliseconds recheck = std::chrono::hours(1)) {
    std::vector<HealthTarget> targets;
    for (std::size_t i = 0; i < servers_.size(); ++i)
      targets.push_back({i == 0 ? kGpu : kCd, servers_[i]->paths(), [this, i] { return state_[i]; }});
    component_ = std::make_unique<HealthComponent>(loop_.ex(), workers_, 0, std::move(targets), recheck);
    loop_.sync([&] {
      asio::co_spawn(loop_.ex(), component_->run(),
                     asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr e) { done_.set_value(e); }));
      return 0;
    });
    ASSERT_TRUE(wait_until([&] { return loop_.sync([&] { return component_->port(); }) != 0; }));
    port_ = loop_.sync([&] { return component_->port(); });
  }

  void stop_component() {
    if (!component_) return;
    loop_.sync([&] {
      stop_.emit(asio::cancellation_type::terminal);
      return 0;
    });
    auto f = done_.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    component_.reset();
  }

  // What kubelet's NotifyRegistrationStatus would do to a driver's state, then the component's hook.
  void kubelet_says(std::size_t driver, RegistrationState state) {
    loop_.sync([&] {
      state_[driver] = state;
      component_->recheck();
      return 0;
    });
  }

  LoopThread loop_;
  runtime::WorkerPool workers_{1};
  std::string root_;
  FakeClaimHandler claims_{loop_.ex()};
  std::vector<std::unique_ptr<kubelet::PluginServer>> servers_;
  RegistrationState state_[2] = {RegistrationState::kWaiting, RegistrationState::kWaiting};
  std::unique_ptr<HealthComponent> component_;
  asio::cancellation_signal stop_;
  std::promise<std::exception_ptr> done_;
  int port_ = 0;
};

TEST_F(HealthComponentTest, ServesUpstreamsNamesAndOnePerDriverAllNotServingBeforeKubeletRegisters) {
  start_component();
  EXPECT_EQ(loop_.sync([&] { return component_->services(); }),
            (std::vector<std::string>{"", "liveness", kGpu, kCd}));
  Watch liveness(port_, "liveness");
  EXPECT_EQ(liveness.last_until("NOT_SERVING"), "NOT_SERVING");
  for (const char* s : {"", "liveness", kGpu, kCd}) EXPECT_EQ(check(port_, s), "NOT_SERVING") << s;
  EXPECT_EQ(check(port_, "readiness"), "rpc error " + std::to_string(grpc::StatusCode::NOT_FOUND));
}

TEST_F(HealthComponentTest, ServingOnlyOnceEveryDriverIsRegistered) {
  start_component();
  Watch gpu(port_, kGpu), liveness(port_, "liveness");
  kubelet_says(0, RegistrationState::kRegistered);
  EXPECT_EQ(gpu.last_until("SERVING"), "SERVING");
  EXPECT_EQ(check(port_, "liveness"), "NOT_SERVING");  // compute-domain is not registered yet
  EXPECT_EQ(check(port_, kCd), "NOT_SERVING");
  kubelet_says(1, RegistrationState::kRegistered);
  EXPECT_EQ(liveness.last_until("SERVING"), "SERVING");
  for (const char* s : {"", "liveness", kGpu, kCd}) EXPECT_EQ(check(port_, s), "SERVING") << s;
  EXPECT_EQ(claims_.prepares.load(), 0);  // the probe's prepare names no claim
}

TEST_F(HealthComponentTest, AWithdrawnRegistrationIsNotServingUntilKubeletRegistersAgain) {
  start_component();
  kubelet_says(0, RegistrationState::kRegistered);
  kubelet_says(1, RegistrationState::kRegistered);
  Watch liveness(port_, "liveness");
  EXPECT_EQ(liveness.last_until("SERVING"), "SERVING");
  kubelet_says(0, RegistrationState::kRejected);
  EXPECT_EQ(liveness.last_until("NOT_SERVING"), "NOT_SERVING");
  EXPECT_EQ(check(port_, kGpu), "NOT_SERVING");
  EXPECT_EQ(check(port_, kCd), "SERVING");
  kubelet_says(0, RegistrationState::kRegistered);
  EXPECT_EQ(liveness.last_until("SERVING"), "SERVING");
}

TEST_F(HealthComponentTest, APluginWhoseSocketWentAwayIsNotServingAtThePeriodicCheck) {
  start_component(std::chrono::milliseconds(50));
  kubelet_says(0, RegistrationState::kRegistered);
  kubelet_says(1, RegistrationState::kRegistered);
  Watch liveness(port_, "liveness");
  EXPECT_EQ(liveness.last_until("SERVING"), "SERVING");
  // kubelet still believes the plugin registered; only a real call notices the socket is gone.
  ASSERT_EQ(::unlink(servers_[1]->paths().dra.c_str()), 0);
  EXPECT_EQ(liveness.last_until("NOT_SERVING"), "NOT_SERVING");
  EXPECT_EQ(check(port_, kCd), "NOT_SERVING");
  EXPECT_EQ(check(port_, kGpu), "SERVING");
}

TEST_F(HealthComponentTest, CancellationClosesThePortAndReturnsCleanly) {
  start_component();
  kubelet_says(0, RegistrationState::kRegistered);
  kubelet_says(1, RegistrationState::kRegistered);
  Watch liveness(port_, "liveness");
  EXPECT_EQ(liveness.last_until("SERVING"), "SERVING");
  stop_component();
  EXPECT_EQ(liveness.last_until("NOT_SERVING"), "NOT_SERVING");
  EXPECT_EQ(check(port_, "liveness"), "rpc error " + std::to_string(grpc::StatusCode::UNAVAILABLE));
}

}  // namespace
}  // namespace nvdra::health::testing
