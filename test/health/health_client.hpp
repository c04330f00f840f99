#pragma once
// A grpc.health.v1 client for the tests, built from the standard proto (as kubelet's prober is):
// one Check, or a Watch stream read until a wanted status.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent/kubelet/proto/grpc_health_v1.grpc.pb.h"

namespace nvdra::health::testing {

namespace hv1 = grpc::health::v1;

inline std::string status_name(hv1::HealthCheckResponse::ServingStatus s) {
  return hv1::HealthCheckResponse::ServingStatus_Name(s);
}

inline std::unique_ptr<hv1::Health::Stub> health_stub(int port) {
  return hv1::Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
}

// The status name, or "rpc error <CODE>" when the call fails.
inline std::string check(int port, const std::string& service) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  hv1::HealthCheckRequest req;
  req.set_service(service);
  hv1::HealthCheckResponse resp;
  auto status = health_stub(port)->Check(&ctx, req, &resp);
  if (!status.ok()) return "rpc error " + std::to_string(status.error_code());
  return status_name(resp.status());
}

// A Watch stream; next_until() reads updates until `wanted` (deadline: the stream's, 20 s).
class Watch {
 public:
  Watch(int port, const std::string& service) : stub_(health_stub(port)) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    hv1::HealthCheckRequest req;
    req.set_service(service);
    reader_ = stub_->Watch(&ctx_, req);
  }
  ~Watch() {
    ctx_.TryCancel();
    (void)reader_->Finish();
  }
  // Every status read, the last being `wanted` unless the stream ended first.
  std::vector<std::string> next_until(const std::string& wanted) {
    std::vector<std::string> seen;
    hv1::HealthCheckResponse resp;
    while (reader_->Read(&resp)) {
      seen.push_back(status_name(resp.status()));
      if (seen.back() == wanted) break;
    }
    return seen;
  }
  // The last status read: "(stream ended)" when none came, so a test compares instead of reading
  // back() of an empty list (undefined: ThreadSanitizer's slower run crashed there).
  std::string last_until(const std::string& wanted) {
    const auto seen = next_until(wanted);
    return seen.empty() ? std::string("(stream ended)") : seen.back();
  }

 private:
  std::unique_ptr<hv1::Health::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<hv1::HealthCheckResponse>> reader_;
};

}  // namespace nvdra::health::testing
