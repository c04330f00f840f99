// kubelet_claim_client — the latency phases of bench/scenario/gpu_claims.py, timed from a compiled
// gRPC client as kubelet's (Go) one is, so the figures are the agent's and not a Python client's.
// It speaks DRA v1 over the agent's real socket for claims the scenario has already allocated.
//
//   kubelet_claim_client --socket <dra.sock> --claims <file> sequential <n>
//       n times: prepare one claim, then unprepare it (claims taken in turn)
//   kubelet_claim_client --socket <dra.sock> --claims <file> concurrent <rounds>
//       per round: one prepare call per claim, all issued at once; then one unprepare of them all
//
// <file>: JSON array of {"uid","namespace","name"}. Prints one JSON object with every latency in
// microseconds ("prepare_us", "unprepare_us", and for concurrent "round_us"). A claim answered
// with an error stops the run (exit 1, the error on stderr): a bench of failures measures nothing.
#include <grpcpp/grpcpp.h>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "agent/kubelet/proto/dra_v1.grpc.pb.h"

namespace dra = k8s::io::kubelet::pkg::apis::dra::v1;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

struct ClaimId {
  std::string uid, ns, name;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "kubelet_claim_client: %s\n", why.c_str());
  std::exit(1);
}

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

std::vector<ClaimId> read_claims(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<ClaimId> out;
  const json::value doc = json::parse(text.str());  // kept: a range-for over parse()'s temporary dangles
  for (const auto& v : doc.as_array()) {
    const auto& o = v.as_object();
    out.push_back({json::value_to<std::string>(o.at("uid")), json::value_to<std::string>(o.at("namespace")),
                   json::value_to<std::string>(o.at("name"))});
  }
  if (out.empty()) die(path + ": no claims");
  return out;
}

void add(google::protobuf::RepeatedPtrField<dra::Claim>* claims, const ClaimId& c) {
  auto* claim = claims->Add();
  claim->set_uid(c.uid);
  claim->set_namespace_(c.ns);
  claim->set_name(c.name);
}

void check(const grpc::Status& status, const std::string& what) {
  if (!status.ok()) die(what + ": " + status.error_message());
}

template <class Response>
void check_claims(const Response& response, const std::string& what) {
  for (const auto& [uid, result] : response.claims())
    if (!result.error().empty()) die(what + " of claim " + uid + ": " + result.error());
}

void prepare_one(dra::DRAPlugin::Stub& stub, const ClaimId& c) {
  grpc::ClientContext ctx;
  dra::NodePrepareResourcesRequest request;
  add(request.mutable_claims(), c);
  dra::NodePrepareResourcesResponse response;
  check(stub.NodePrepareResources(&ctx, request, &response), "prepare");
  check_claims(response, "prepare");
}

void unprepare(dra::DRAPlugin::Stub& stub, const std::vector<ClaimId>& claims) {
  grpc::ClientContext ctx;
  dra::NodeUnprepareResourcesRequest request;
  for (const auto& c : claims) add(request.mutable_claims(), c);
  dra::NodeUnprepareResourcesResponse response;
  check(stub.NodeUnprepareResources(&ctx, request, &response), "unprepare");
  check_claims(response, "unprepare");
}

json::object sequential(dra::DRAPlugin::Stub& stub, const std::vector<ClaimId>& claims, int n) {
  json::array prepare_us, unprepare_us;
  for (int i = 0; i < n; ++i) {
    const auto& c = claims[static_cast<std::size_t>(i) % claims.size()];
    auto t0 = Clock::now();
    prepare_one(stub, c);
    prepare_us.push_back(us_since(t0));
    t0 = Clock::now();
    unprepare(stub, {c});
    unprepare_us.push_back(us_since(t0));
  }
  return {{"prepare_us", std::move(prepare_us)}, {"unprepare_us", std::move(unprepare_us)}};
}

// All prepares of a round in flight at once through the callback API (no thread per call).
json::object concurrent(dra::DRAPlugin::Stub& stub, const std::vector<ClaimId>& claims, int rounds) {
  json::array prepare_us, round_us;
  for (int r = 0; r < rounds; ++r) {
    struct Call {
      grpc::ClientContext ctx;
      dra::NodePrepareResourcesRequest request;
      dra::NodePrepareResourcesResponse response;
      Clock::time_point start;
      double us = 0;
      grpc::Status status;
    };
    std::vector<Call> calls(claims.size());
    std::mutex mu;
    std::condition_variable cv;
    std::size_t done = 0;
    const auto round_start = Clock::now();
    for (std::size_t i = 0; i < claims.size(); ++i) {
      auto& call = calls[i];
      add(call.request.mutable_claims(), claims[i]);
      call.start = Clock::now();
      stub.async()->NodePrepareResources(&call.ctx, &call.request, &call.response, [&, i](grpc::Status status) {
        calls[i].us = us_since(calls[i].start);
        std::lock_guard lock(mu);
        calls[i].status = std::move(status);
        ++done;
        cv.notify_one();
      });
    }
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return done == claims.size(); });
    }
    round_us.push_back(us_since(round_start));
    for (const auto& call : calls) {
      check(call.status, "prepare");
      check_claims(call.response, "prepare");
      prepare_us.push_back(call.us);
    }
    unprepare(stub, claims);
  }
  return {{"prepare_us", std::move(prepare_us)}, {"round_us", std::move(round_us)}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, claims_file, mode;
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--socket" && i + 1 < argc) socket = argv[++i];
    else if (arg == "--claims" && i + 1 < argc) claims_file = argv[++i];
    else if (mode.empty()) mode = arg;
    else count = std::atoi(argv[i]);
  }
  if (socket.empty() || claims_file.empty() || (mode != "sequential" && mode != "concurrent") || count <= 0)
    die("usage: --socket <dra.sock> --claims <file> sequential|concurrent <n>");
  const auto claims = read_claims(claims_file);
  auto stub = dra::DRAPlugin::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  // Warm the channel (connection set-up is not a prepare's cost).
  prepare_one(*stub, claims.front());
  unprepare(*stub, {claims.front()});
  const auto report = mode == "sequential" ? sequential(*stub, claims, count) : concurrent(*stub, claims, count);
  std::cout << json::serialize(report) << "\n";
  return 0;
}
