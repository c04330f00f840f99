// What the publisher writes per server version: rules from /version + the served OpenAPI fields,
// the codec of the 1.36 fields, and the read-back of fields a server's gate dropped.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "k8s/server_features.hpp"
#include "k8s/slice_codec.hpp"
#include "k8s/slice_plan.hpp"

namespace nvdra::k8s {
namespace {

std::string reference(const std::string& file) {
  for (const std::string& dir : {std::string(NVDRA_SOURCE_DIR_DEFAULT) + "/../shared/reference/k8s-openapi/",
                                std::string("/work/shared/reference/k8s-openapi/")}) {
    std::ifstream in(dir + file);
    if (in) {
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    }
  }
  ADD_FAILURE() << "reference document " << file << " not found";
  return {};
}

ServerVersion v(int minor) { return ServerVersion{1, minor, "v1." + std::to_string(minor) + ".0"}; }

PublishedDevice shared_gpu(int i) {
  PublishedDevice d;
  d.name = "gpu-" + std::to_string(i);
  d.attributes["type"] = std::string("gpu");
  d.attributes["resource.kubernetes.io/numaNode"] = std::vector<int64_t>{1};
  d.capacity["memory"] = "40Gi";
  d.capacity["shares"] = "3";
  d.allow_multiple_allocations = true;
  d.request_policies["memory"] = CapacityRequestPolicy{"0", "0", "40Gi", "1Mi"};
  d.request_policies["shares"] = CapacityRequestPolicy{"1", "1", "3", "1"};
  return d;
}

TEST(ServerFeatures, OpenApiDocumentsOfEachVersionSayWhatIsServed) {
  auto f34 = served_fields_from_openapi(reference("v1.34/apis__resource.k8s.io__v1_openapi.json"));
  auto f35 = served_fields_from_openapi(reference("apis__resource.k8s.io__v1_openapi.json"));
  auto f36 = served_fields_from_openapi(reference("v1.36/apis__resource.k8s.io__v1_openapi.reconstructed.json"));
  ASSERT_TRUE(f34 && f35 && f36);
  EXPECT_EQ(*f34, (ServedFields{false, true}));
  EXPECT_EQ(*f35, (ServedFields{false, true}));
  EXPECT_EQ(*f36, (ServedFields{true, true}));
  EXPECT_FALSE(served_fields_from_openapi(reference("apis__coordination.k8s.io__v1_openapi.json")));
  EXPECT_FALSE(served_fields_from_openapi("not json"));
}

TEST(ServerFeatures, IndexNamesTheDocument) {
  const std::string index =
      R"({"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=A"},)"
      R"("apis/resource.k8s.io/v1":{"serverRelativeURL":"/openapi/v3/apis/resource.k8s.io/v1?hash=B"}}})";
  auto path = openapi_document_path(index, "resource.k8s.io/v1");
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, "/openapi/v3/apis/resource.k8s.io/v1?hash=B");
  EXPECT_FALSE(openapi_document_path(index, "resource.k8s.io/v1beta2"));
  EXPECT_FALSE(openapi_document_path("{}", "resource.k8s.io/v1"));
}

TEST(ServerFeatures, RulesPerVersion) {
  EXPECT_EQ(rules_for(v(34), {false, true}), (SliceRules{CounterLayout::kWithConsumers, false, true, false}));
  EXPECT_EQ(rules_for(v(35), {false, true}), (SliceRules{CounterLayout::kSeparateSlices, false, true, false}));
  EXPECT_EQ(rules_for(v(36), {true, true}), (SliceRules{CounterLayout::kSeparateSlices, true, true, true}));
  EXPECT_EQ(rules_for(v(37), {true, true}), (SliceRules{CounterLayout::kSeparateSlices, true, true, true}));
  // Without a readable OpenAPI: what the version is known to serve.
  EXPECT_EQ(served_fields_by_version(v(35)), (ServedFields{false, true}));
  EXPECT_EQ(served_fields_by_version(v(36)), (ServedFields{true, true}));
}

TEST(SlicePlanRules, ListsAndSharesOnlyWhereServed) {
  DriverResources desired;
  desired.devices.push_back(shared_gpu(0));
  auto full = plan_slices(desired, SliceRules{CounterLayout::kSeparateSlices, true, true, true});
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(full[0].devices[0], shared_gpu(0));

  auto old = plan_slices(desired, SliceRules{CounterLayout::kSeparateSlices, false, false, false});
  const auto& d = old[0].devices[0];
  EXPECT_EQ(d.attributes.at("resource.kubernetes.io/numaNode"), AttributeValue(int64_t{1}));  // single value
  EXPECT_FALSE(d.allow_multiple_allocations);
  EXPECT_TRUE(d.request_policies.empty());
  EXPECT_EQ(d.capacity.at("memory"), "40Gi");

  // Longer lists have no single value: dropped where lists are not served.
  desired.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<int64_t>{0, 1};
  auto dropped = plan_slices(desired, SliceRules{});
  EXPECT_EQ(dropped[0].devices[0].attributes.count("resource.kubernetes.io/numaNode"), 0u);
}

TEST(SlicePlanRules, ListAttributesCountForTheDeviceCapFrom136) {
  DriverResources desired;
  for (int i = 0; i < 100; ++i) desired.devices.push_back(shared_gpu(i));
  EXPECT_EQ(plan_slices(desired, SliceRules{CounterLayout::kSeparateSlices, true, true, true}).size(), 2u);  // 64 + 36
  EXPECT_EQ(plan_slices(desired, SliceRules{CounterLayout::kSeparateSlices, true, true, false}).size(), 1u);
}

TEST(SliceCodec136, ListsPoliciesAndMultipleAllocationsRoundTrip) {
  SliceObject s;
  s.name = "x";
  s.driver = "gpu.nvidia.com";
  s.node_name = s.pool_name = "n";
  s.resource_slice_count = 1;
  s.content.devices.push_back(shared_gpu(0));
  const auto json = encode_slice(s);
  EXPECT_NE(json.find(R"("resource.kubernetes.io/numaNode":{"ints":[1]})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("memory":{"value":"40Gi","requestPolicy":{"default":"0","validRange":{"min":"0","max":"40Gi","step":"1Mi"}}})"),
            std::string::npos) << json;
  EXPECT_NE(json.find(R"("allowMultipleAllocations":true)"), std::string::npos) << json;
  auto back = decode_slice(json);
  ASSERT_TRUE(back) << back.error().describe();
  EXPECT_EQ(back->content, s.content);
}

TEST(ServerFeatures, ReadBackFindsWhatAGateDropped) {
  SliceContent sent;
  sent.devices.push_back(shared_gpu(0));
  SliceContent stored = sent;
  EXPECT_FALSE(fields_dropped(sent, stored).any());
  stored.devices[0].attributes.erase("resource.kubernetes.io/numaNode");
  EXPECT_TRUE(fields_dropped(sent, stored).list_attributes);
  EXPECT_FALSE(fields_dropped(sent, stored).multiple_allocations);
  stored.devices[0].allow_multiple_allocations = false;
  stored.devices[0].request_policies.clear();
  EXPECT_TRUE(fields_dropped(sent, stored).multiple_allocations);
}

}  // namespace
}  // namespace nvdra::k8s
