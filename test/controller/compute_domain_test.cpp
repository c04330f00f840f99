// The workload ResourceClaimTemplate as upstream's controller renders it, and the JSON edits the
// controller makes (finalizers, status) keeping every other field.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "agent/controller/compute_domain.hpp"

namespace nvdra::controller {
namespace {

namespace json = boost::json;

const char* kCd = R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomain",
  "metadata":{"name":"train-a","namespace":"team","uid":"cd-uid-1","resourceVersion":"7",
              "labels":{"x":"y"},"finalizers":["other/one"]},
  "spec":{"numNodes":0,"channel":{"resourceClaimTemplate":{"name":"train-a-imex-channel"},"allocationMode":"Single"}},
  "status":{"status":"NotReady","nodes":[]}})";

TEST(ComputeDomainCodec, DecodesWhatTheControllerNeeds) {
  auto cd = decode_compute_domain(kCd);
  ASSERT_TRUE(cd.ok());
  EXPECT_EQ(cd->name, "train-a");
  EXPECT_EQ(cd->ns, "team");
  EXPECT_EQ(cd->uid, "cd-uid-1");
  EXPECT_EQ(cd->resource_version, "7");
  EXPECT_EQ(cd->rct_name, "train-a-imex-channel");
  EXPECT_EQ(cd->allocation_mode, "Single");
  EXPECT_EQ(cd->status, "NotReady");
  EXPECT_FALSE(cd->deleting);
  EXPECT_FALSE(cd->has_finalizer());
}

TEST(ComputeDomainCodec, RejectsObjectsWithoutIdentity) {
  EXPECT_FALSE(decode_compute_domain("[]").ok());
  EXPECT_FALSE(decode_compute_domain(R"({"metadata":{"name":"a"}})").ok());
  EXPECT_FALSE(decode_compute_domain("not json").ok());
}

TEST(WorkloadRct, RenderedAsUpstream) {
  auto cd = decode_compute_domain(kCd);
  ASSERT_TRUE(cd.ok());
  const auto expected = json::parse(R"({
    "apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
    "metadata":{"namespace":"team","name":"train-a-imex-channel","finalizers":["resource.nvidia.com/computeDomain"],
                "labels":{"resource.nvidia.com/computeDomain":"cd-uid-1",
                          "resource.nvidia.com/computeDomainTarget":"Workload"}},
    "spec":{"spec":{"devices":{
      "requests":[{"name":"channel","exactly":{"deviceClassName":"compute-domain-default-channel.nvidia.com"}}],
      "config":[{"requests":["channel"],"opaque":{"driver":"compute-domain.nvidia.com","parameters":{
        "apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig",
        "domainID":"cd-uid-1","allocationMode":"Single"}}}]}}}})");
  EXPECT_EQ(json::parse(render_workload_rct(*cd)), expected);
}

TEST(WorkloadRct, AnEmptyAllocationModeIsLeftOut) {
  auto cd = decode_compute_domain(kCd);
  ASSERT_TRUE(cd.ok());
  cd->allocation_mode.clear();
  auto rct = json::parse(render_workload_rct(*cd));
  const auto& params = rct.at_pointer("/spec/spec/devices/config/0/opaque/parameters").as_object();
  EXPECT_FALSE(params.contains("allocationMode"));
  EXPECT_EQ(params.at("domainID"), "cd-uid-1");
}

TEST(JsonEdits, FinalizerAddedOnceAndRemovedKeepingTheRest) {
  auto added = with_finalizer(kCd, kComputeDomainFinalizer, true);
  ASSERT_TRUE(added.ok());
  auto again = with_finalizer(*added, kComputeDomainFinalizer, true);
  ASSERT_TRUE(again.ok());
  auto doc = json::parse(*again);
  EXPECT_EQ(doc.at_pointer("/metadata/finalizers"), json::parse(R"(["other/one","resource.nvidia.com/computeDomain"])"));
  EXPECT_EQ(doc.at_pointer("/metadata/labels/x"), "y");
  EXPECT_EQ(doc.at_pointer("/spec/numNodes"), 0);
  EXPECT_TRUE(decode_compute_domain(*again)->has_finalizer());

  auto removed = with_finalizer(*again, kComputeDomainFinalizer, false);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(json::parse(*removed).at_pointer("/metadata/finalizers"), json::parse(R"(["other/one"])"));
  auto none = with_finalizer(*removed, "other/one", false);
  EXPECT_FALSE(json::parse(*none).at_pointer("/metadata").as_object().contains("finalizers"));
}

TEST(JsonEdits, StatusReadyKeepsTheNodes) {
  auto ready = with_status(kCd, "Ready");
  ASSERT_TRUE(ready.ok());
  auto doc = json::parse(*ready);
  EXPECT_EQ(doc.at_pointer("/status/status"), "Ready");
  EXPECT_TRUE(doc.at_pointer("/status/nodes").is_array());
  EXPECT_EQ(decode_compute_domain(*ready)->status, "Ready");
}

}  // namespace
}  // namespace nvdra::controller
