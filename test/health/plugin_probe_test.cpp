// probe_plugin: upstream's health probe (GetInfo, then an empty NodePrepareResources) against a real
// PluginServer on unix sockets, and against sockets that went away.
#include "agent/health/plugin_probe.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>

#include <cstdio>
#include <filesystem>
#include <future>

#include "agent/kubelet/plugin_server.hpp"
#include "test/kubelet/fake_claim_handler.hpp"
#include "test/kubelet/loop_thread.hpp"

namespace nvdra::health::testing {
namespace {

using kubelet::testing::FakeClaimHandler;
using kubelet::testing::LoopThread;

class PluginProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvdra-hp-XXXXXX";  // short: unix socket paths are limited to 107 bytes
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    server_ = std::make_unique<kubelet::PluginServer>(
        loop_.ex(), kubelet::PluginServerConfig{"gpu.nvidia.com", root_ + "/registry", root_ + "/plugins/gpu", ""},
        claims_, nullptr);
    server_->start();
  }
  void TearDown() override {
    loop_.await(server_->stop());
    std::filesystem::remove_all(root_);
  }
  std::string probe(std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    return loop_.await(probe_plugin(server_->paths(), deadline));
  }

  LoopThread loop_;
  std::string root_;
  FakeClaimHandler claims_{loop_.ex()};
  std::unique_ptr<kubelet::PluginServer> server_;
};

TEST_F(PluginProbeTest, ALivePluginAnswersBothCallsAndNoClaimIsPrepared) {
  EXPECT_EQ(probe(), "");
  EXPECT_EQ(probe(), "");  // a second round on fresh connections
  EXPECT_EQ(claims_.prepares.load(), 0);
}

TEST_F(PluginProbeTest, ARemovedRegistrationSocketFailsGetInfoNamingTheSocket) {
  ASSERT_EQ(::unlink(server_->paths().registration.c_str()), 0);
  const auto error = probe();
  EXPECT_NE(error.find("GetInfo on " + server_->paths().registration + " failed"), std::string::npos) << error;
}

TEST_F(PluginProbeTest, ARemovedDraSocketFailsNodePrepareResources) {
  ASSERT_EQ(::unlink(server_->paths().dra.c_str()), 0);
  const auto error = probe();
  EXPECT_NE(error.find("NodePrepareResources (v1beta1, no claims) on " + server_->paths().dra + " failed"),
            std::string::npos)
      << error;
}

TEST_F(PluginProbeTest, CancellationEndsAProbeWhoseCallHangs) {
  // A listening socket that never answers: the call would wait for its whole deadline.
  const auto silent = root_ + "/silent.sock";
  kubelet::SocketPaths paths{silent, silent};
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", silent.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  boost::asio::cancellation_signal cancel;
  std::promise<std::string> result;
  loop_.sync([&] {
    boost::asio::co_spawn(loop_.ex(), probe_plugin(paths, std::chrono::minutes(5)),
                          boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, std::string r) {
                            result.set_value(e ? "threw" : r);
                          }));
    return 0;
  });
  // The connection is accepted by the kernel's backlog; the call stays in flight until cancelled.
  loop_.sync([&] {
    cancel.emit(boost::asio::cancellation_type::terminal);
    return 0;
  });
  auto f = result.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const auto error = f.get();
  EXPECT_NE(error.find("GetInfo"), std::string::npos) << error;
  EXPECT_NE(error.find("code 1:"), std::string::npos) << error;  // CANCELLED
  ::close(fd);
}

}  // namespace
}  // namespace nvdra::health::testing
