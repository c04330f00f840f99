// HealthEndpoint: grpc++'s default health service on a TCP port, as kubelet's gRPC probe sees it.
#include "agent/health/health_endpoint.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "test/health/health_client.hpp"

namespace nvdra::health::testing {
namespace {

class HealthEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override { HealthEndpoint::enable_default_service(); }
};

TEST_F(HealthEndpointTest, EveryNamedServiceStartsNotServingAndAnUnknownOneIsNotFound) {
  HealthEndpoint endpoint(0);
  endpoint.start({"liveness", "gpu.nvidia.com"});
  ASSERT_GT(endpoint.port(), 0);
  EXPECT_EQ(check(endpoint.port(), ""), "NOT_SERVING");  // grpc++ would start "" SERVING
  EXPECT_EQ(check(endpoint.port(), "liveness"), "NOT_SERVING");
  EXPECT_EQ(check(endpoint.port(), "gpu.nvidia.com"), "NOT_SERVING");
  EXPECT_EQ(check(endpoint.port(), "other"), "rpc error " + std::to_string(grpc::StatusCode::NOT_FOUND));
  endpoint.stop();
}

TEST_F(HealthEndpointTest, SetSwitchesOneServiceAndWatchersHearIt) {
  HealthEndpoint endpoint(0);
  endpoint.start({"liveness", "gpu.nvidia.com"});
  Watch watch(endpoint.port(), "liveness");
  EXPECT_EQ(watch.next_until("NOT_SERVING"), std::vector<std::string>{"NOT_SERVING"});
  endpoint.set("liveness", true);
  EXPECT_EQ(watch.next_until("SERVING"), std::vector<std::string>{"SERVING"});
  EXPECT_EQ(check(endpoint.port(), "gpu.nvidia.com"), "NOT_SERVING");
  endpoint.stop();
}

TEST_F(HealthEndpointTest, StopTellsWatchersNotServingAndClosesThePort) {
  HealthEndpoint endpoint(0);
  endpoint.start({"liveness"});
  endpoint.set("liveness", true);
  const int port = endpoint.port();
  Watch watch(port, "liveness");
  EXPECT_EQ(watch.last_until("SERVING"), "SERVING");
  endpoint.stop();
  EXPECT_EQ(watch.last_until("NOT_SERVING"), "NOT_SERVING");
  EXPECT_EQ(check(port, "liveness"), "rpc error " + std::to_string(grpc::StatusCode::UNAVAILABLE));
}

TEST_F(HealthEndpointTest, APortAlreadyInUseIsRefusedNamingThePort) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_any;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin6_port);

  HealthEndpoint endpoint(port);
  try {
    endpoint.start({"liveness"});
    FAIL() << "a second listener on port " << port << " was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("TCP port " + std::to_string(port)), std::string::npos) << e.what();
  }
  ::close(fd);
}

}  // namespace
}  // namespace nvdra::health::testing
