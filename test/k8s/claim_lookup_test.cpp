#include "k8s/claim_lookup.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace nvdra::k8s {
namespace {

namespace json = boost::json;

json::object config(const char* source, json::array requests, const char* driver, json::value params) {
  return json::object{{"source", source},
                      {"requests", std::move(requests)},
                      {"opaque", json::object{{"driver", driver}, {"parameters", std::move(params)}}}};
}

json::object claim(json::array results, json::array configs) {
  json::object alloc{{"devices", json::object{{"results", std::move(results)}, {"config", std::move(configs)}}}};
  return json::object{{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", json::object{{"name", "c1"}, {"namespace", "ns"}, {"uid", "u-1"}}},
                      {"status", json::object{{"allocation", std::move(alloc)}}}};
}

json::object result(const char* request, const char* driver, const char* device) {
  return json::object{{"request", request}, {"driver", driver}, {"pool", "node1"}, {"device", device}};
}

const ClaimRef kRef{"ns", "c1", "u-1"};

TEST(ClaimLookup, ExtractsOnlyThisDriversResultsAndConfigsClassFirst) {
  auto c = claim(json::array{result("gpu", "gpu.nvidia.com", "gpu-0"), result("cd", "compute-domain.nvidia.com", "channel-0")},
                 json::array{config("FromClaim", {}, "gpu.nvidia.com", json::object{{"kind", "GpuConfig"}}),
                             config("FromClass", {}, "gpu.nvidia.com", json::object{{"kind", "ClassConfig"}}),
                             config("FromClaim", {}, "other.example.com", json::object{})});
  auto got = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->devices.size(), 1u);
  EXPECT_EQ(got->devices[0].device, "gpu-0");
  ASSERT_EQ(got->configs.size(), 2u);
  EXPECT_EQ(got->configs[0].source, ConfigSource::kClass);
  EXPECT_EQ(got->configs[1].source, ConfigSource::kClaim);
  EXPECT_EQ(got->configs[1].parameters, R"({"kind":"GpuConfig"})");
  ASSERT_EQ(got->devices[0].configs.size(), 2u);
  EXPECT_EQ(got->devices[0].configs.back().config, 1u);  // the claim's config has the last word
}

TEST(ClaimLookup, ReadsThePodClaimNameOfAClaimMadeFromATemplate) {
  auto c = claim(json::array{result("gpu", "gpu.nvidia.com", "gpu-0")}, json::array{});
  auto plain = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_FALSE(plain->pod_claim_name.has_value());
  c["metadata"].as_object()["annotations"] =
      json::object{{"resource.kubernetes.io/pod-claim-name", "my-gpu"}, {"other", "x"}};
  auto made = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_TRUE(made.ok()) << made.error().describe();
  EXPECT_EQ(made->pod_claim_name, std::optional<std::string>("my-gpu"));
}

TEST(ClaimLookup, SubrequestResultsMatchExactAndParentRequestNames) {
  auto c = claim(json::array{result("gpu/small", "gpu.nvidia.com", "gpu-0-mig-1g10gb-19-0")},
                 json::array{config("FromClaim", json::array{"gpu"}, "gpu.nvidia.com", json::object{}),
                             config("FromClaim", json::array{"gpu/small"}, "gpu.nvidia.com", json::object{}),
                             config("FromClaim", json::array{"other"}, "gpu.nvidia.com", json::object{})});
  auto got = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->devices.size(), 1u);
  EXPECT_EQ(got->devices[0].base_request, "gpu");
  ASSERT_EQ(got->devices[0].configs.size(), 2u);
  EXPECT_EQ(got->devices[0].configs[0].match, RequestMatch::kParentRequest);
  EXPECT_EQ(got->devices[0].configs[1].match, RequestMatch::kExact);
}

TEST(ClaimLookup, ReplacedClaimIsAnErrorNamingTheClaimAndBothUids) {
  auto c = claim(json::array{}, json::array{});
  auto got = parse_claim_allocation(json::serialize(c), ClaimRef{"ns", "c1", "u-OLD"}, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().field, "metadata.uid");
  EXPECT_NE(got.error().describe().find("ns/c1"), std::string::npos);
  EXPECT_NE(got.error().message.find("u-1"), std::string::npos);
}

TEST(ClaimLookup, UnallocatedClaimIsAnError) {
  json::object c{{"metadata", json::object{{"name", "c1"}, {"namespace", "ns"}, {"uid", "u-1"}}}};
  auto got = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().field, "status.allocation");
}

TEST(ClaimLookup, BadConfigSourceAndNonOpaqueConfigNameTheEntryAndAllowedValues) {
  auto bad_source = claim(json::array{}, json::array{config("FromNowhere", {}, "gpu.nvidia.com", json::object{})});
  auto got = parse_claim_allocation(json::serialize(bad_source), kRef, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().field, "status.allocation.devices.config[0].source");
  EXPECT_NE(got.error().message.find("FromClass, FromClaim"), std::string::npos);
  auto c = claim(json::array{}, json::array{json::object{{"source", "FromClaim"}}});
  got = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().field, "status.allocation.devices.config[0].opaque");
}

TEST(ClaimLookup, ResultWithoutDeviceIsAnError) {
  json::object r{{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node1"}};
  auto got = parse_claim_allocation(json::serialize(claim(json::array{r}, json::array{})), kRef, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().field, "status.allocation.devices.results[0].device");
}

TEST(ClaimLookup, ClaimWithNoResultOfThisDriverIsAnErrorNamingTheClaimAndDrivers) {
  auto c = claim(json::array{result("gpu", "other.example.com", "gpu-0"), result("x", "b.example.com", "d")},
                 json::array{});
  auto got = parse_claim_allocation(json::serialize(c), kRef, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().field, "status.allocation.devices.results");
  EXPECT_EQ(got.error().describe(),
            "claim ns/c1 (u-1): field status.allocation.devices.results: no device is allocated by driver "
            "gpu.nvidia.com (results are for: b.example.com, other.example.com)");
  got = parse_claim_allocation(json::serialize(claim(json::array{}, json::array{})), kRef, "gpu.nvidia.com");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("(results are for: no driver)"), std::string::npos) << got.error().message;
}

}  // namespace
}  // namespace nvdra::k8s
