// The webhook's decision for every kind and version, good and bad, and its refusals of bodies that
// are no AdmissionReview.
#include "agent/admission/admission_review.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <tuple>

#include "test/admission/review_builder.hpp"

namespace nvdra::admission {
namespace {

using test::claim_spec;
using test::gpu_config;
using test::opaque;
using test::review_of;

constexpr claims::ConfigGates kDefaultGates{};  // upstream's defaults: TimeSlicing, MPS, … off
constexpr claims::ConfigGates kAllGates{true, true, true, true};

boost::json::object response_of(const ReviewReply& reply) {
  auto review = boost::json::parse(reply.body).as_object();
  EXPECT_EQ(review.at("apiVersion"), "admission.k8s.io/v1");
  EXPECT_EQ(review.at("kind"), "AdmissionReview");
  auto response = review.at("response").as_object();
  EXPECT_EQ(response.at("uid"), "0d1c5b3e-1111-4a8e-9e1e-2b9d5a6f7c80");
  return response;
}

std::string message_of(const ReviewReply& reply) {
  return std::string(response_of(reply).at("status").at("message").as_string());
}

boost::json::value bad_interval() {
  return gpu_config({{"sharing", {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Forever"}}}}}});
}

class EveryKindAndVersion : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(EveryKindAndVersion, AllowsGoodConfigsOfBothDrivers) {
  const auto& [resource, version] = GetParam();
  const auto reply = review(
      review_of(resource, version,
                claim_spec({opaque("gpu.nvidia.com", gpu_config({{"sharing", {{"strategy", "MPS"}}}})),
                            opaque("gpu.nvidia.com", gpu_config({}, "VfioDeviceConfig")),
                            opaque("compute-domain.nvidia.com",
                                   gpu_config({{"domainID", "4a1f"}, {"allocationMode", "All"}}, "ComputeDomainChannelConfig")),
                            opaque("example.com/other", boost::json::object{{"anything", "goes"}})})),
      kAllGates);
  ASSERT_EQ(reply.verdict, Verdict::kAllowed) << reply.body;
  EXPECT_EQ(response_of(reply).at("allowed"), true);
  EXPECT_EQ(reply.configs_checked, 3u);  // the other driver's config is not looked at
}

TEST_P(EveryKindAndVersion, DeniesEachBadConfigWithItsPath) {
  const auto& [resource, version] = GetParam();
  const auto reply = review(
      review_of(resource, version,
                claim_spec({opaque("gpu.nvidia.com", bad_interval()),
                            opaque("compute-domain.nvidia.com", gpu_config({}, "ComputeDomainChannelConfig"))})),
      kAllGates);
  ASSERT_EQ(reply.verdict, Verdict::kDenied) << reply.body;
  const auto response = response_of(reply);
  EXPECT_EQ(response.at("allowed"), false);
  EXPECT_EQ(response.at("status").at("reason"), "Invalid");
  const std::string spec = resource == "resourceclaims" ? "spec" : "spec.spec";
  EXPECT_EQ(message_of(reply),
            "2 configs failed to validate: object at " + spec +
                ".devices.config[0].opaque.parameters is invalid: sharing.timeSlicingConfig.interval: unknown time-slice "
                "interval: Forever, supported time-slice intervals: Default, Short, Medium, Long; object at " +
                spec + ".devices.config[1].opaque.parameters is invalid: domainID: domainID cannot be empty");
}

INSTANTIATE_TEST_SUITE_P(Admission, EveryKindAndVersion,
                         ::testing::Combine(::testing::Values("resourceclaims", "resourceclaimtemplates"),
                                            ::testing::Values("v1", "v1beta1", "v1beta2")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

TEST(AdmissionReview, UpdateIsCheckedLikeCreate) {
  const auto reply = review(
      review_of("resourceclaims", "v1", claim_spec({opaque("gpu.nvidia.com", bad_interval())}), "UPDATE"), kAllGates);
  EXPECT_EQ(reply.verdict, Verdict::kDenied);
}

TEST(AdmissionReview, DeleteIsAllowedUnread) {
  const auto reply = review(
      review_of("resourceclaims", "v1", claim_spec({opaque("gpu.nvidia.com", bad_interval())}), "DELETE"), kAllGates);
  EXPECT_EQ(reply.verdict, Verdict::kAllowed);
}

TEST(AdmissionReview, FollowsTheFeatureGatesLikePrepare) {
  const auto body = review_of("resourceclaims", "v1",
                              claim_spec({opaque("gpu.nvidia.com", gpu_config({{"sharing", {{"strategy", "MPS"}}}}))}));
  const auto off = review(body, kDefaultGates);
  ASSERT_EQ(off.verdict, Verdict::kDenied);
  EXPECT_NE(message_of(off).find("the \"MPSSupport\" feature gate is not enabled"), std::string::npos);
  EXPECT_EQ(review(body, kAllGates).verdict, Verdict::kAllowed);
}

TEST(AdmissionReview, UnknownFieldIsADecodingError) {
  const auto reply = review(review_of("resourceclaimtemplates", "v1beta2",
                                      claim_spec({opaque("gpu.nvidia.com", gpu_config({{"sharingPolicy", "MPS"}}))})),
                            kAllGates);
  ASSERT_EQ(reply.verdict, Verdict::kDenied);
  EXPECT_EQ(message_of(reply),
            "1 configs failed to validate: error decoding object at spec.spec.devices.config[0].opaque.parameters: "
            "strict decoding error: unknown field \"sharingPolicy\"; allowed fields: apiVersion, kind, sharing, "
            "fabricTopologyConfig");
}

TEST(AdmissionReview, AnotherDriversKindIsRefusedWithTheAllowedKinds) {
  const auto reply = review(
      review_of("resourceclaims", "v1",
                claim_spec({opaque("gpu.nvidia.com", gpu_config({{"domainID", "x"}}, "ComputeDomainChannelConfig"))})),
      kAllGates);
  ASSERT_EQ(reply.verdict, Verdict::kDenied);
  EXPECT_NE(message_of(reply).find("kind: ComputeDomainChannelConfig is not a configuration of driver gpu.nvidia.com "
                                   "(its kinds: GpuConfig, MigDeviceConfig, VfioDeviceConfig)"),
            std::string::npos);
}

TEST(AdmissionReview, OtherResourcesAreABadRequest) {
  auto body = boost::json::parse(review_of("resourceclaims", "v1alpha3", claim_spec({})));
  const auto reply = review(boost::json::serialize(body), kAllGates);
  ASSERT_EQ(reply.verdict, Verdict::kDenied);
  EXPECT_EQ(response_of(reply).at("status").at("reason"), "BadRequest");
  // upstream's message, verbatim
  EXPECT_EQ(message_of(reply),
            "expected resource to be one of [{resource.k8s.io v1 resourceclaims} {resource.k8s.io v1beta1 "
            "resourceclaims} {resource.k8s.io v1beta2 resourceclaims} {resource.k8s.io v1 resourceclaimtemplates} "
            "{resource.k8s.io v1beta1 resourceclaimtemplates} {resource.k8s.io v1beta2 resourceclaimtemplates}], got "
            "{resource.k8s.io v1alpha3 resourceclaims}");
}

TEST(AdmissionReview, AnObjectOfTheWrongShapeIsABadRequest) {
  auto body = boost::json::parse(review_of("resourceclaims", "v1", claim_spec({}))).as_object();
  body["request"].as_object()["object"].as_object()["spec"].as_object()["devices"].as_object()["config"] = "x";
  const auto reply = review(boost::json::serialize(body), kAllGates);
  ASSERT_EQ(reply.verdict, Verdict::kDenied);
  EXPECT_EQ(message_of(reply), "could not decode the object: spec.devices.config: must be an array");
}

TEST(AdmissionReview, AClaimWithoutConfigsIsAllowed) {
  auto body = boost::json::parse(review_of("resourceclaims", "v1", claim_spec({}))).as_object();
  body["request"].as_object()["object"].as_object().erase("spec");
  EXPECT_EQ(review(boost::json::serialize(body), kAllGates).verdict, Verdict::kAllowed);
}

TEST(AdmissionReview, BodiesThatAreNoReviewAreRefused) {
  const auto good = review_of("resourceclaims", "v1", claim_spec({opaque("gpu.nvidia.com", gpu_config({}))}));
  auto wrong_version = boost::json::parse(good).as_object();
  wrong_version["apiVersion"] = "admission.k8s.io/v1beta1";
  auto no_uid = boost::json::parse(good).as_object();
  no_uid["request"].as_object().erase("uid");
  const std::pair<std::string, std::string> cases[] = {
      {good.substr(0, good.size() / 2), "request could not be decoded"},
      {"", "request could not be decoded"},
      {"[1,2]", "the body is not a JSON object"},
      {boost::json::serialize(wrong_version), "unsupported group version kind: admission.k8s.io/v1beta1"},
      {boost::json::serialize(no_uid), "request.uid is missing"},
      {std::string(kMaxReviewBytes + 1, ' '), "more than the 7340032 accepted"},
  };
  for (const auto& [body, expected] : cases) {
    const auto reply = review(body, kAllGates);
    EXPECT_EQ(reply.verdict, Verdict::kBadRequest) << expected;
    EXPECT_NE(reply.body.find(expected), std::string::npos) << reply.body;
  }
}

}  // namespace
}  // namespace nvdra::admission
