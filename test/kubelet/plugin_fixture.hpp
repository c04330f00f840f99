#pragma once
// PluginFixture — a PluginServer for one driver on real unix sockets in a private directory, with
// the fake claim handler and health source, and gRPC client stubs built from the published protos.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <memory>
#include <string>

#include "agent/kubelet/plugin_server.hpp"
#include "agent/kubelet/proto/dra_v1.grpc.pb.h"
#include "agent/kubelet/proto/dra_v1beta1.grpc.pb.h"
#include "agent/kubelet/proto/health_v1.grpc.pb.h"
#include "agent/kubelet/proto/health_v1alpha1.grpc.pb.h"
#include "agent/kubelet/proto/registration.grpc.pb.h"
#include "test/kubelet/fake_claim_handler.hpp"
#include "test/kubelet/fake_health_source.hpp"
#include "test/kubelet/loop_thread.hpp"

namespace nvdra::kubelet::testing {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

class PluginFixture : public ::testing::Test {
 protected:
  static constexpr const char* kDriver = "gpu.nvidia.com";

  void SetUp() override {
    char tmpl[] = "/tmp/nvdra-kt-XXXXXX";  // short: unix socket paths are limited to 107 bytes
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }

  void TearDown() override {
    stop();
    std::filesystem::remove_all(root_);
  }

  PluginServerConfig config(const std::string& uid = "") const {
    return PluginServerConfig{kDriver, root_ + "/registry", root_ + "/plugins/" + kDriver, uid};
  }

  void start(bool with_health = true, const std::string& uid = "") {
    server_ = std::make_unique<PluginServer>(loop_.ex(), config(uid), claims_, with_health ? &health_ : nullptr);
    server_->start();
  }

  void stop() {
    if (server_) loop_.await(server_->stop());
  }

  std::shared_ptr<grpc::Channel> channel(const std::string& path) {
    return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  }
  std::unique_ptr<pluginregistration::Registration::Stub> registration() {
    return pluginregistration::Registration::NewStub(channel(server_->paths().registration));
  }
  std::unique_ptr<drav1::DRAPlugin::Stub> dra_v1() { return drav1::DRAPlugin::NewStub(channel(server_->paths().dra)); }
  std::unique_ptr<drav1beta1::DRAPlugin::Stub> dra_v1beta1() {
    return drav1beta1::DRAPlugin::NewStub(channel(server_->paths().dra));
  }

  template <class Request>
  static void add_claim(Request& request, const std::string& uid, const std::string& name = "claim") {
    auto* c = request.add_claims();
    c->set_namespace_("default");
    c->set_name(name + "-" + uid);
    c->set_uid(uid);
  }

  static std::unique_ptr<grpc::ClientContext> context(std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    return ctx;
  }

  LoopThread loop_;
  std::string root_;
  FakeClaimHandler claims_{loop_.ex()};
  FakeHealthSource health_{loop_.ex()};
  std::unique_ptr<PluginServer> server_;
};

}  // namespace nvdra::kubelet::testing
