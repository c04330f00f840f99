// The controller's add and delete paths against the API-server double, which validates every write
// against the real OpenAPI (RCT) and the shipped CRD (ComputeDomain) and keeps finalizers as the
// real server does (a delete only marks the object while finalizers remain).
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include "agent/controller/compute_domain.hpp"
#include "agent/controller/compute_domain_reconciler.hpp"
#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::controller {
namespace {

using namespace nvdra::k8s;
using namespace nvdra::k8s::testing;
using namespace boost::asio::experimental::awaitable_operators;
namespace json = boost::json;

class ReconcilerTest : public DoubleTest {
 protected:
  void SetUp() override {
    DoubleTest::SetUp();
    api_ = make_api();
    ReconcilerOptions o;
    o.backoff_base = std::chrono::milliseconds(50);
    o.backoff_cap = std::chrono::milliseconds(500);
    reconciler_ = std::make_unique<ComputeDomainReconciler>(io_.get_executor(), api_, o);
    reconciler_->on_error([this](const std::string& m) { errors_.push_back(m); });
  }

  awaitable<std::string> create_cd(std::string ns, std::string name, std::string rct, std::string mode = "Single") {
    json::object channel{{"resourceClaimTemplate", json::object{{"name", rct}}}};
    if (!mode.empty()) channel["allocationMode"] = mode;
    json::object cd{{"apiVersion", "resource.nvidia.com/v1beta1"},
                    {"kind", "ComputeDomain"},
                    {"metadata", json::object{{"name", name}, {"namespace", ns}}},
                    {"spec", json::object{{"numNodes", 0}, {"channel", std::move(channel)}}}};
    auto res = co_await api_->create(kComputeDomainsV1beta1, ns, json::serialize(cd));
    if (!res) throw std::runtime_error(res.error().describe());
    co_return decode_compute_domain(*res)->uid;
  }

  awaitable<std::vector<std::string>> list(ResourceType type, std::string ns) {
    ListOptions lo;
    auto res = co_await api_->list(type, ns, lo);
    if (!res) throw std::runtime_error(res.error().describe());
    co_return res->items;
  }

  awaitable<std::optional<std::string>> get(ResourceType type, std::string ns, std::string name) {
    ObjectKey key;
    key.ns = ns;
    key.name = name;
    auto res = co_await api_->get(type, key);
    if (!res && res.error().not_found()) co_return std::nullopt;
    if (!res) throw std::runtime_error(res.error().describe());
    co_return *res;
  }

  // Re-checks `pred` until it holds (the fixture's deadline bounds the wait).
  awaitable<void> until(std::function<awaitable<bool>()> pred) {
    for (;;) {
      if (co_await pred()) co_return;
      asio::steady_timer t(io_, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::use_awaitable);
    }
  }

  awaitable<bool> ready(std::string ns, std::string name) {
    auto cd = co_await get(kComputeDomainsV1beta1, ns, name);
    co_return cd && decode_compute_domain(*cd)->status == "Ready";
  }

  awaitable<void> with_reconciler(std::function<awaitable<void>()> body) { co_await (reconciler_->run() || body()); }

  std::shared_ptr<HttpsApiServer> api_;
  std::unique_ptr<ComputeDomainReconciler> reconciler_;
  std::vector<std::string> errors_;
};

TEST_F(ReconcilerTest, AddPathMakesExactlyOneWorkloadRctPerComputeDomainAndSetsReady) {
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    co_await with_reconciler([&]() -> awaitable<void> {
      const auto uid_a = co_await create_cd("team", "train-a", "train-a-channel");
      const auto uid_b = co_await create_cd("team", "train-b", "train-b-channel", "");
      co_await until([&]() -> awaitable<bool> { co_return (co_await ready("team", "train-a")) && (co_await ready("team", "train-b")); });
      auto rcts = co_await list(kResourceClaimTemplatesV1, "team");
      CO_ASSERT_EQ(rcts.size(), 2u);
      for (const auto& [name, uid] : {std::pair{"train-a-channel", uid_a}, std::pair{"train-b-channel", uid_b}}) {
        auto rct = co_await get(kResourceClaimTemplatesV1, "team", name);
        CO_ASSERT_TRUE(rct.has_value());
        auto doc = json::parse(*rct);
        EXPECT_EQ(doc.at_pointer("/metadata/labels/resource.nvidia.com~1computeDomain"), uid.c_str());
        EXPECT_EQ(doc.at_pointer("/metadata/labels/resource.nvidia.com~1computeDomainTarget"), "Workload");
        EXPECT_EQ(doc.at_pointer("/metadata/finalizers/0"), kComputeDomainFinalizer);
        EXPECT_EQ(doc.at_pointer("/spec/spec/devices/config/0/opaque/parameters/domainID"), uid.c_str());
        auto cd = decode_compute_domain(*co_await get(kComputeDomainsV1beta1, "team",
                                                      name == std::string("train-a-channel") ? "train-a" : "train-b"));
        EXPECT_TRUE(cd->has_finalizer());
      }
      EXPECT_EQ(reconciler_->tracked().size(), 2u);
      // Nothing more to write once everything is right: further passes are no-ops. The watch resumes
      // after the drop, and a change made after it (a label) must reach the reconciler through it and
      // cause a pass. (Waiting for a pass count instead hung when the first events had been coalesced
      // into fewer passes: a resume with nothing new causes none.)
      const auto creates = reconciler_->stats().rct_creates;
      const auto passes = reconciler_->stats().passes;
      co_await admin.post("/admin/drop-watches");
      ObjectKey key;
      key.ns = "team";
      key.name = "train-a";
      auto labelled = co_await api_->patch(kComputeDomainsV1beta1, key, R"({"metadata":{"labels":{"touched":"yes"}}})");
      if (!labelled) {
        ADD_FAILURE() << "labelling train-a: " << labelled.error().describe();
        co_return;
      }
      co_await until([&]() -> awaitable<bool> { co_return reconciler_->stats().passes > passes; });
      EXPECT_EQ(reconciler_->stats().rct_creates, creates);
    });
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_EQ(rejections, json::array{});
  });
  EXPECT_EQ(reconciler_->stats().rct_creates, 2u);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(ReconcilerTest, DeletePathRemovesTheRctThenBothFinalizersAndForgetsTheDomain) {
  run([&]() -> awaitable<void> {
    co_await with_reconciler([&]() -> awaitable<void> {
      co_await create_cd("team", "train-a", "train-a-channel");
      co_await until([&]() -> awaitable<bool> { co_return co_await ready("team", "train-a"); });
      EXPECT_EQ(reconciler_->tracked().size(), 1u);
      ObjectKey key;
      key.ns = "team";
      key.name = "train-a";
      auto removed = co_await api_->remove(kComputeDomainsV1beta1, key, Preconditions{});
      CO_ASSERT_TRUE(removed.ok());
      // The finalizer holds the CD until the controller has cleaned up; then the server drops it.
      co_await until([&]() -> awaitable<bool> {
        co_return !(co_await get(kComputeDomainsV1beta1, "team", "train-a")).has_value();
      });
      EXPECT_FALSE((co_await get(kResourceClaimTemplatesV1, "team", "train-a-channel")).has_value());
      EXPECT_TRUE((co_await list(kResourceClaimTemplatesV1, "team")).empty());
      co_await until([&]() -> awaitable<bool> { co_return reconciler_->tracked().empty(); });
    });
  });
  EXPECT_EQ(reconciler_->stats().rct_deletes, 1u);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(ReconcilerTest, AnRctOfAnotherOwnerIsNeverTouchedAndTheDomainIsReported) {
  run([&]() -> awaitable<void> {
    ComputeDomain other;
    other.ns = "team";
    other.uid = "someone-else";
    other.rct_name = "shared-name";
    auto made = co_await api_->create(kResourceClaimTemplatesV1, "team", render_workload_rct(other));
    CO_ASSERT_TRUE(made.ok());
    co_await with_reconciler([&]() -> awaitable<void> {
      co_await create_cd("team", "train-a", "shared-name");
      co_await until([&]() -> awaitable<bool> { co_return !errors_.empty(); });
    });
    EXPECT_NE(errors_.front().find("already exists and does not belong to it"), std::string::npos) << errors_.front();
    EXPECT_FALSE(co_await ready("team", "train-a"));
    auto rct = co_await get(kResourceClaimTemplatesV1, "team", "shared-name");
    CO_ASSERT_TRUE(rct.has_value());
    EXPECT_EQ(json::parse(*rct).at_pointer("/metadata/labels/resource.nvidia.com~1computeDomain"), "someone-else");
  });
}

TEST_F(ReconcilerTest, ConflictsAndServerErrorsAreRetried) {
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    json::object conflict{{"method", "PUT"}, {"resource", "computedomains"}, {"status", 409}, {"count", 1}};
    co_await admin.post("/admin/faults", conflict);
    json::object failure{{"method", "POST"}, {"resource", "resourceclaimtemplates"}, {"status", 500}, {"count", 2}};
    co_await admin.post("/admin/faults", failure);
    co_await with_reconciler([&]() -> awaitable<void> {
      co_await create_cd("team", "train-a", "train-a-channel");
      co_await until([&]() -> awaitable<bool> { co_return co_await ready("team", "train-a"); });
    });
    EXPECT_EQ((co_await list(kResourceClaimTemplatesV1, "team")).size(), 1u);
  });
  EXPECT_GE(reconciler_->stats().conflicts, 1u);
  EXPECT_GE(reconciler_->stats().failures, 2u);
  EXPECT_EQ(reconciler_->stats().rct_creates, 1u);
}

}  // namespace
}  // namespace nvdra::controller
