// PluginServer over real unix sockets, driven by a gRPC client built from the published protos:
// registration, per-claim answers in both DRA versions, socket handling.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>

#include "test/kubelet/plugin_fixture.hpp"

namespace nvdra::kubelet::testing {
namespace {

using PluginServerTest = PluginFixture;

std::vector<PreparedDevice> one_gpu(const std::string& name) {
  return {PreparedDevice{{"req"}, "node-1", name, {"k8s.gpu.nvidia.com/device=" + name}, std::nullopt}};
}

TEST_F(PluginServerTest, GetInfoAdvertisesDriverDraEndpointAndBothVersionsInKubeletsOrder) {
  start(/*with_health=*/false);
  pluginregistration::PluginInfo info;
  auto ctx = context();
  ASSERT_TRUE(registration()->GetInfo(ctx.get(), {}, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), kDriver);
  EXPECT_EQ(info.endpoint(), root_ + "/plugins/gpu.nvidia.com/dra.sock");
  EXPECT_EQ(std::vector<std::string>(info.supported_versions().begin(), info.supported_versions().end()),
            (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"}));
}

TEST_F(PluginServerTest, GetInfoAdvertisesHealthServicesOnlyWhenAHealthSourceIsWired) {
  start(/*with_health=*/true);
  pluginregistration::PluginInfo info;
  auto ctx = context();
  ASSERT_TRUE(registration()->GetInfo(ctx.get(), {}, &info).ok());
  EXPECT_EQ(std::vector<std::string>(info.supported_versions().begin(), info.supported_versions().end()),
            (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                                      "v1alpha1.DRAResourceHealth"}));
}

TEST_F(PluginServerTest, RejectionIsRecordedWithKubeletsReasonAndALaterSuccessClearsIt) {
  start();
  std::vector<RegistrationState> seen;
  loop_.sync([&] { server_->on_registration([&](const RegistrationStatus& s) { seen.push_back(s.state); }); });
  pluginregistration::RegistrationStatus rejected;
  rejected.set_plugin_registered(false);
  rejected.set_error("RegisterPlugin error -- plugin validation failed");
  pluginregistration::RegistrationStatusResponse reply;
  auto ctx = context();
  const auto status = registration()->NotifyRegistrationStatus(ctx.get(), rejected, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(status.error_message(), "failed registration process: RegisterPlugin error -- plugin validation failed");
  auto after_reject = loop_.sync([&] { return server_->registration(); });
  EXPECT_EQ(after_reject.state, RegistrationState::kRejected);
  EXPECT_EQ(after_reject.error, "RegisterPlugin error -- plugin validation failed");
  EXPECT_EQ(after_reject.rejections, 1u);

  pluginregistration::RegistrationStatus ok;
  ok.set_plugin_registered(true);
  auto ctx2 = context();
  EXPECT_TRUE(registration()->NotifyRegistrationStatus(ctx2.get(), ok, &reply).ok());
  auto after_ok = loop_.sync([&] { return server_->registration(); });
  EXPECT_EQ(after_ok.state, RegistrationState::kRegistered);
  EXPECT_TRUE(after_ok.error.empty());
  EXPECT_EQ(loop_.sync([&] { return seen; }),
            (std::vector<RegistrationState>{RegistrationState::kRejected, RegistrationState::kRegistered}));
}

TEST_F(PluginServerTest, V1PrepareAnswersEveryClaimByUidAndAnUnknownClaimFailsAlone) {
  loop_.sync([&] {
    claims_.know("uid-a", one_gpu("gpu-0"));
    auto shared = one_gpu("gpu-1");
    shared[0].share_id = "share-7";
    claims_.know("uid-b", shared);
  });
  start();
  drav1::NodePrepareResourcesRequest request;
  add_claim(request, "uid-a");
  add_claim(request, "uid-missing");
  add_claim(request, "uid-b");
  drav1::NodePrepareResourcesResponse response;
  auto ctx = context();
  ASSERT_TRUE(dra_v1()->NodePrepareResources(ctx.get(), request, &response).ok());
  ASSERT_EQ(response.claims().size(), 3u);
  const auto& a = response.claims().at("uid-a");
  EXPECT_TRUE(a.error().empty());
  ASSERT_EQ(a.devices_size(), 1);
  EXPECT_EQ(a.devices(0).pool_name(), "node-1");
  EXPECT_EQ(a.devices(0).device_name(), "gpu-0");
  EXPECT_EQ(a.devices(0).request_names(0), "req");
  EXPECT_EQ(a.devices(0).cdi_device_ids(0), "k8s.gpu.nvidia.com/device=gpu-0");
  EXPECT_FALSE(a.devices(0).has_share_id());
  EXPECT_EQ(response.claims().at("uid-b").devices(0).share_id(), "share-7");
  EXPECT_EQ(response.claims().at("uid-missing").error(),
            "claim default/claim-uid-missing (uid-missing): claim is not known to the fake handler");
}

TEST_F(PluginServerTest, V1beta1PrepareGivesTheSameAnswersAsV1) {
  loop_.sync([&] { claims_.know("uid-a", one_gpu("gpu-0")); });
  start();
  drav1beta1::NodePrepareResourcesRequest request;
  add_claim(request, "uid-a");
  add_claim(request, "uid-missing");
  drav1beta1::NodePrepareResourcesResponse response;
  auto ctx = context();
  ASSERT_TRUE(dra_v1beta1()->NodePrepareResources(ctx.get(), request, &response).ok());
  ASSERT_EQ(response.claims().size(), 2u);
  EXPECT_EQ(response.claims().at("uid-a").devices(0).device_name(), "gpu-0");
  EXPECT_NE(response.claims().at("uid-missing").error().find("not known"), std::string::npos);
}

TEST_F(PluginServerTest, UnprepareAnswersEveryClaimInBothVersions) {
  start();
  drav1::NodeUnprepareResourcesRequest v1;
  add_claim(v1, "uid-a");
  add_claim(v1, "uid-b");
  drav1::NodeUnprepareResourcesResponse v1_reply;
  auto ctx = context();
  ASSERT_TRUE(dra_v1()->NodeUnprepareResources(ctx.get(), v1, &v1_reply).ok());
  EXPECT_EQ(v1_reply.claims().size(), 2u);
  EXPECT_TRUE(v1_reply.claims().at("uid-a").error().empty());

  drav1beta1::NodeUnprepareResourcesRequest beta;
  add_claim(beta, "uid-c");
  drav1beta1::NodeUnprepareResourcesResponse beta_reply;
  auto ctx2 = context();
  ASSERT_TRUE(dra_v1beta1()->NodeUnprepareResources(ctx2.get(), beta, &beta_reply).ok());
  EXPECT_TRUE(beta_reply.claims().contains("uid-c"));
  EXPECT_EQ(claims_.unprepares.load(), 3);
}

TEST_F(PluginServerTest, MalformedClaimIsAnRpcErrorNamingTheField) {
  start();
  drav1::NodePrepareResourcesRequest request;
  add_claim(request, "uid-a");
  request.add_claims()->set_uid("uid-b");  // no namespace, no name
  drav1::NodePrepareResourcesResponse response;
  auto ctx = context();
  const auto status = dra_v1()->NodePrepareResources(ctx.get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "claims[1].namespace is empty; every claim needs namespace, name and uid");
}

TEST_F(PluginServerTest, EmptyPrepareGetsAnEmptyMapAsTheUpstreamLivenessProbeExpects) {
  start();
  drav1beta1::NodePrepareResourcesResponse response;
  auto ctx = context();
  ASSERT_TRUE(dra_v1beta1()->NodePrepareResources(ctx.get(), {}, &response).ok());
  EXPECT_TRUE(response.claims().empty());
}

TEST_F(PluginServerTest, SocketsAreMode0750AndRemovedAtStop) {
  start();
  for (const auto& path : {server_->paths().dra, server_->paths().registration}) {
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
    EXPECT_TRUE(S_ISSOCK(st.st_mode)) << path;
    EXPECT_EQ(st.st_mode & 0777, 0750u) << path;
  }
  const auto paths = server_->paths();
  stop();
  EXPECT_FALSE(std::filesystem::exists(paths.dra));
  EXPECT_FALSE(std::filesystem::exists(paths.registration));
  EXPECT_TRUE(std::filesystem::is_empty(root_ + "/registry")) << "no staging leftovers";
}

TEST_F(PluginServerTest, StaleSocketFromACrashIsReplaced) {
  const auto paths = socket_paths(kDriver, root_ + "/registry", root_ + "/plugins/gpu.nvidia.com", "");
  std::filesystem::create_directories(root_ + "/registry");
  // A socket file nobody listens on, as a killed agent leaves it.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", paths.registration.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);
  start();
  pluginregistration::PluginInfo info;
  auto ctx = context();
  EXPECT_TRUE(registration()->GetInfo(ctx.get(), {}, &info).ok());
}

TEST_F(PluginServerTest, ASocketPathTooLongIsAStartUpErrorNamingThePathAndLimit) {
  const std::string deep = root_ + "/" + std::string(100, 'd');
  try {
    PluginServer server(loop_.ex(), PluginServerConfig{kDriver, root_ + "/registry", deep, ""}, claims_, nullptr);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(deep + "/dra.sock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 107 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--kubelet-plugins-directory-path"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdra::kubelet::testing
