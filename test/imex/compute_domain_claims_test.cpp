// ComputeDomainClaimHandler: the seed's §7.2–§7.4 prepare rules and §7.3 unprepare, against an
// in-memory API server (claims and ComputeDomains), memory CDI and checkpoint stores.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <map>
#include <optional>

#include "test/support/run_awaitable.hpp"
#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"
#include "agent/drivers/compute_domain_claims.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/memory_spec_store.hpp"
#include "k8s/api_server.hpp"

namespace nvdra::drivers {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;

// Serves GET resourceclaims and LIST computedomains; everything else is refused.
class FakeApi final : public k8s::ApiServer {
 public:
  asio::awaitable<k8s::ApiResult<std::string>> get(k8s::ResourceType type, k8s::ObjectKey key) override {
    auto it = claims.find(key.ns + "/" + key.name);
    if (type.plural != "resourceclaims" || it == claims.end())
      co_return k8s::ApiError{404, "NotFound", type.plural + " \"" + key.name + "\" not found", {}};
    co_return it->second;
  }
  asio::awaitable<k8s::ApiResult<k8s::ListResult>> list(k8s::ResourceType type, std::string ns,
                                                        k8s::ListOptions) override {
    ++lists;
    if (type.plural != "computedomains") co_return k8s::ApiError{404, "NotFound", "no such resource", {}};
    k8s::ListResult out;
    for (const auto& [key, body] : domains)
      if (ns.empty() || key.starts_with(ns + "/")) out.items.push_back(body);
    co_return out;
  }
  asio::awaitable<k8s::ApiResult<std::unique_ptr<k8s::WatchStream>>> watch(k8s::ResourceType, std::string,
                                                                           k8s::WatchOptions) override {
    co_return k8s::ApiError{405, "MethodNotAllowed", "not in this fake", {}};
  }
  asio::awaitable<k8s::ApiResult<std::string>> create(k8s::ResourceType, std::string, std::string) override {
    co_return k8s::ApiError{405, "MethodNotAllowed", "the handler must not write", {}};
  }
  asio::awaitable<k8s::ApiResult<std::string>> update(k8s::ResourceType, k8s::ObjectKey, std::string) override {
    co_return k8s::ApiError{405, "MethodNotAllowed", "the handler must not write", {}};
  }
  asio::awaitable<k8s::ApiResult<std::string>> patch(k8s::ResourceType, k8s::ObjectKey, std::string) override {
    co_return k8s::ApiError{405, "MethodNotAllowed", "the handler must not write", {}};
  }
  asio::awaitable<k8s::ApiStatus> remove(k8s::ResourceType, k8s::ObjectKey, k8s::Preconditions) override {
    co_return k8s::ApiError{405, "MethodNotAllowed", "the handler must not write", {}};
  }
  asio::awaitable<k8s::ApiResult<k8s::ServerVersion>> version() override { co_return k8s::ServerVersion{1, 34, "v1.34.0"}; }

  void add_domain(const std::string& ns, const std::string& name, const std::string& uid) {
    domains[ns + "/" + name] = json::serialize(json::object{
        {"apiVersion", "resource.nvidia.com/v1beta1"},
        {"kind", "ComputeDomain"},
        {"metadata", json::object{{"name", name}, {"namespace", ns}, {"uid", uid}}},
        {"spec", json::object{{"numNodes", 0},
                              {"channel", json::object{{"resourceClaimTemplate", json::object{{"name", name + "-ch"}}},
                                                       {"allocationMode", "Single"}}}}}});
  }

  std::map<std::string, std::string> claims;   // "ns/name" → ResourceClaim JSON
  std::map<std::string, std::string> domains;  // "ns/name" → ComputeDomain JSON
  int lists = 0;
};

json::object channel_config(const std::string& domain, const std::optional<std::string>& mode) {
  json::object p{{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "ComputeDomainChannelConfig"},
                 {"domainID", domain}};
  if (mode) p["allocationMode"] = *mode;
  return p;
}

class ComputeDomainClaims : public ::testing::Test {
 protected:
  void SetUp() override {
    committer_ = std::make_unique<claims::CheckpointCommitter>(io_.get_executor(), pool_, checkpoints_,
                                                               claims::Checkpoint{});
    api_ = std::make_shared<FakeApi>();
    api_->add_domain("team-a", "train-a", "cd-uid-1");
    options_.host_managed = true;
    options_.channel_major = 234;
    options_.clique_id = "7b0f3c4e-1111-2222-3333-444455556666.1";
    make_handler();
  }

  void make_handler() {
    handler_ = std::make_unique<ComputeDomainClaimHandler>(pool_, api_, *committer_, specs_, options_, gate_);
  }

  // A claim allocated channel-0 (or `devices`) with these opaque parameters, FromClaim.
  kubelet::ClaimRef add_claim(const std::string& name, const std::string& uid, json::array configs,
                              std::vector<std::string> devices = {"channel-0"}, const std::string& ns = "team-a") {
    json::array results;
    for (std::size_t i = 0; i < devices.size(); ++i)
      results.push_back(json::object{{"request", i == 0 ? "channel" : "channel" + std::to_string(i)},
                                     {"driver", "compute-domain.nvidia.com"}, {"pool", "node-a"},
                                     {"device", devices[i]}});
    json::object claim{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
                       {"metadata", json::object{{"name", name}, {"namespace", ns}, {"uid", uid}}},
                       {"status", json::object{{"allocation", json::object{{"devices", json::object{
                                                                                {"results", results},
                                                                                {"config", configs}}}}}}}};
    api_->claims[ns + "/" + name] = json::serialize(claim);
    return kubelet::ClaimRef{ns, name, uid};
  }
  static json::array from_claim(json::object parameters, json::array requests = {"channel"}) {
    return json::array{json::object{{"source", "FromClaim"}, {"requests", std::move(requests)},
                                    {"opaque", json::object{{"driver", "compute-domain.nvidia.com"},
                                                            {"parameters", std::move(parameters)}}}}};
  }
  kubelet::ClaimRef single(const std::string& name, const std::string& uid, std::optional<std::string> mode = "Single") {
    return add_claim(name, uid, from_claim(channel_config("cd-uid-1", mode)));
  }

  // Runs one awaitable on the test's io_context to completion (deadline 30 s).
  template <class T>
  T run(asio::awaitable<T> op) {
    return nvdra::testing::run_awaitable(io_, std::move(op));
  }
  Result<std::vector<kubelet::PreparedDevice>> prepare(const kubelet::ClaimRef& c) { return run(handler_->prepare(c)); }
  Status unprepare(const kubelet::ClaimRef& c) { return run(handler_->unprepare(c)); }

  std::string prepare_error(const kubelet::ClaimRef& c) {
    auto r = prepare(c);
    EXPECT_FALSE(r) << "prepare of " << c.describe() << " succeeded";
    return r ? std::string() : r.error().describe();
  }
  static std::string spec_file(const std::string& uid) { return "k8s.compute-domain.nvidia.com-claim_" + uid + ".yaml"; }

  asio::io_context io_;  // outlives the pool: saves finishing at teardown post to it
  runtime::WorkerPool pool_{2};
  claims::MemoryCheckpointStore checkpoints_;
  cdi::MemorySpecStore specs_;
  std::unique_ptr<claims::CheckpointCommitter> committer_;
  std::shared_ptr<FakeApi> api_;
  ComputeDomainClaimOptions options_;
  PrepareGate gate_;
  std::unique_ptr<ComputeDomainClaimHandler> handler_;
};

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST_F(ComputeDomainClaims, SingleInjectsChannelZeroAndCheckpointsUpstreamShape) {
  auto claim = single("w1", "uid-1");
  auto devices = prepare(claim);
  ASSERT_TRUE(devices) << devices.error().describe();
  ASSERT_EQ(devices->size(), 1u);
  const auto& d = (*devices)[0];
  EXPECT_EQ(d.device_name, "channel-0");
  EXPECT_EQ(d.pool_name, "node-a");
  EXPECT_EQ(d.request_names, std::vector<std::string>{"channel"});
  EXPECT_EQ(d.cdi_device_ids, std::vector<std::string>{"k8s.compute-domain.nvidia.com/claim=uid-1-channel-0"});

  auto files = specs_.files();
  ASSERT_EQ(files.count(spec_file("uid-1")), 1u);
  auto spec = json::parse(files.at(spec_file("uid-1")));
  const auto& node = spec.at("devices").at(0).at("containerEdits").at("deviceNodes").at(0);
  EXPECT_EQ(node.at("path").as_string(), "/dev/nvidia-caps-imex-channels/channel0");
  EXPECT_EQ(node.at("major").to_number<int64_t>(), 234);
  EXPECT_EQ(node.as_object().count("minor"), 0u) << "minor 0 left out, as CDI's omitempty does";
  // Upstream writes no hostPath: the runtime makes the node from type/major/minor, whatever the
  // driver root (a hostPath under it broke every node whose driver root is not "/").
  EXPECT_EQ(node.as_object().count("hostPath"), 0u);
  EXPECT_EQ(spec.at("devices").at(0).at("containerEdits").as_object().count("mounts"), 0u);  // no /imexd

  const auto& entry = committer_->current().claims.at("uid-1");
  EXPECT_EQ(entry.state, claims::ClaimState::kPrepareCompleted);
  EXPECT_EQ(json::serialize(entry.prepared_devices),
            R"([{"devices":[{"channel":{"info":{"id":0},"device":{"Requests":["channel"],"PoolName":"node-a",)"
            R"("DeviceName":"channel-0","CDIDeviceIDs":["k8s.compute-domain.nvidia.com/claim=uid-1-channel-0"]}},)"
            R"("daemon":null}],"configState":{"Type":"channel","ComputeDomain":"cd-uid-1"}}])");

  // kubelet repeats: the same answer from the checkpoint, no second API read.
  const auto lists = api_->lists;
  auto again = prepare(claim);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *devices);
  EXPECT_EQ(api_->lists, lists);
}

TEST_F(ComputeDomainClaims, EmptyAllocationModeIsSingle) {
  ASSERT_TRUE(prepare(single("w1", "uid-1", std::nullopt)));
}

TEST_F(ComputeDomainClaims, AllAndUnknownModesArePermanentErrorsNamingTheValue) {
  for (const std::string mode : {"All", "foo"}) {
    auto e = prepare_error(single("w-" + mode, "uid-" + mode, mode));
    EXPECT_HAS(e, "allocationMode \"" + mode + "\" is not supported under HostManagedIMEX");
    EXPECT_HAS(e, "claim team-a/w-" + mode + " (uid-" + mode + ")");
    EXPECT_HAS(e, "permanent");
  }
  EXPECT_TRUE(specs_.files().empty());
  EXPECT_TRUE(committer_->current().claims.empty());
}

TEST_F(ComputeDomainClaims, NoCliqueIsAPermanentErrorNamingIt) {
  options_.clique_id.clear();
  make_handler();
  auto e = prepare_error(single("w1", "uid-1"));
  EXPECT_HAS(e, "host-managed IMEX requires an NVLink clique on this node; NVML reports none");
  EXPECT_TRUE(specs_.files().empty());
}

TEST_F(ComputeDomainClaims, SecondChannelClaimOnTheNodeFailsThroughTheCheckpoint) {
  ASSERT_TRUE(prepare(single("w1", "uid-1")));
  auto e = prepare_error(single("w2", "uid-2"));
  EXPECT_HAS(e, "channel 0 already allocated by claim team-a/w1 (uid-1) (according to checkpoint)");
  // Once the first is unprepared, the second goes through.
  ASSERT_TRUE(unprepare({"team-a", "w1", "uid-1"}));
  EXPECT_TRUE(prepare({"team-a", "w2", "uid-2"}));
}

TEST_F(ComputeDomainClaims, DaemonConfigAndDaemonDeviceAreRefused) {
  json::object daemon{{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "ComputeDomainDaemonConfig"},
                      {"domainID", "cd-uid-1"}};
  auto e = prepare_error(add_claim("d1", "uid-d1", from_claim(daemon), {"daemon-0"}));
  EXPECT_HAS(e, "daemon claims are disabled under HostManagedIMEX");
  e = prepare_error(add_claim("d2", "uid-d2", from_claim(daemon)));
  EXPECT_HAS(e, "daemon claims are disabled under HostManagedIMEX");
  EXPECT_TRUE(specs_.files().empty());
}

TEST_F(ComputeDomainClaims, ExactlyOneAllocationResult) {
  auto e = prepare_error(add_claim("w1", "uid-1", from_claim(channel_config("cd-uid-1", "Single"), json::array{}),
                                   {"channel-0", "channel-0"}));
  EXPECT_HAS(e, "exactly one allocation result");
}

TEST_F(ComputeDomainClaims, InvalidConfigIsRefusedFirst) {
  auto e = prepare_error(add_claim("w1", "uid-1", from_claim(channel_config("", "Single"))));
  EXPECT_HAS(e, "domainID cannot be empty");
  json::object extra = channel_config("cd-uid-1", "Single");
  extra["bogus"] = 1;
  e = prepare_error(add_claim("w2", "uid-2", from_claim(extra)));
  EXPECT_HAS(e, "unknown field \"bogus\"");
}

TEST_F(ComputeDomainClaims, ComputeDomainMustExistInTheClaimsNamespace) {
  auto e = prepare_error(add_claim("w1", "uid-1", from_claim(channel_config("no-such-uid", "Single"))));
  EXPECT_HAS(e, "ComputeDomain not found: no-such-uid");
  api_->add_domain("team-b", "train-b", "cd-uid-b");
  e = prepare_error(add_claim("w2", "uid-2", from_claim(channel_config("cd-uid-b", "Single"))));
  EXPECT_HAS(e, "the ResourceClaim's namespace is different than the ComputeDomain's namespace");
  EXPECT_HAS(e, "\"team-b\"");
}

TEST_F(ComputeDomainClaims, GateOffSaysDriverManagedModeIsNotProvided) {
  options_.host_managed = false;
  make_handler();
  auto e = prepare_error(single("w1", "uid-1"));
  EXPECT_HAS(e, "driver-managed IMEX is not provided by this process");
  EXPECT_TRUE(unprepare({"team-a", "w1", "uid-1"}));  // unprepare always works
}

TEST_F(ComputeDomainClaims, EnforceGateRefusesNewClaimsButLeavesPreparedOnes) {
  bool unit_active = true;
  gate_ = [&unit_active]() -> Status {
    if (unit_active) return {};
    return make_error(ErrorCode::kUnavailable, "the host's IMEX unit nvidia-imex.service must be active");
  };
  make_handler();
  auto first = single("w1", "uid-1");
  ASSERT_TRUE(prepare(first));
  unit_active = false;
  EXPECT_TRUE(prepare(first));  // already prepared: answered from the checkpoint
  ASSERT_TRUE(unprepare(first));
  auto e = prepare_error(single("w2", "uid-2"));
  EXPECT_HAS(e, "nvidia-imex.service must be active");
  unit_active = true;
  EXPECT_TRUE(prepare({"team-a", "w2", "uid-2"}));
}

TEST_F(ComputeDomainClaims, UnprepareRemovesSpecAndEntryAndIsIdempotent) {
  auto claim = single("w1", "uid-1");
  ASSERT_TRUE(prepare(claim));
  ASSERT_TRUE(unprepare(claim));
  EXPECT_TRUE(specs_.files().empty());
  EXPECT_TRUE(committer_->current().claims.empty());
  EXPECT_TRUE(unprepare(claim));
}

TEST_F(ComputeDomainClaims, RecoverDropsHalfPreparedClaims) {
  claims::CheckpointedClaim started{claims::ClaimState::kPrepareStarted, json::object{}, {}, "w9", "team-a", {}};
  ASSERT_TRUE(run(committer_->commit({claims::ClaimUpdate{"uid-9", started}})));
  std::vector<cdi::SpecChange> leftover{cdi::SpecChange::write(spec_file("uid-9"), "{}")};
  ASSERT_TRUE(specs_.apply(leftover));
  auto errors = run(handler_->recover());
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(committer_->current().claims.empty());
  EXPECT_TRUE(specs_.files().empty());
}

TEST_F(ComputeDomainClaims, NoApiServerIsAClearError) {
  handler_ = std::make_unique<ComputeDomainClaimHandler>(pool_, nullptr, *committer_, specs_, options_, gate_);
  EXPECT_HAS(prepare_error(single("w1", "uid-1")), "no Kubernetes API server is configured");
}

}  // namespace
}  // namespace nvdra::drivers
