// `nvdractl validate`'s core: YAML and JSON streams, embedded claim specs, kubectl's scalar rules.
#include "agent/admission/manifest_check.hpp"

#include <gtest/gtest.h>

namespace nvdra::admission {
namespace {

constexpr claims::ConfigGates kAllGates{true, true, true, true};

constexpr std::string_view kStream = R"(# a GitOps file
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: mps, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
      config:
      - requests: [gpu]
        opaque:
          driver: gpu.nvidia.com
          parameters:
            apiVersion: resource.nvidia.com/v1beta1
            kind: GpuConfig
            sharing:
              strategy: MPS
              mpsConfig: {defaultActiveThreadPercentage: 120, multiUser: yes}
      - opaque:
          driver: example.com/other
          parameters: {whatever: 1}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: ok}
spec:
  devices:
    config:
    - opaque:
        driver: compute-domain.nvidia.com
        parameters: {apiVersion: resource.nvidia.com/v1beta1, kind: ComputeDomainChannelConfig, domainID: "123"}
---
---
{"apiVersion": "v1", "kind": "List", "items": [{"kind": "ResourceClaim", "metadata": {"name": "j"},
 "spec": {"devices": {"config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters":
 {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharingPolicy": "MPS"}}}]}}}]}
)";

TEST(ManifestCheck, FindsEachBadConfigWithDocumentObjectAndField) {
  auto report = check_manifests(kStream, kAllGates);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->documents, 3u);
  EXPECT_EQ(report->configs, 3u);
  ASSERT_EQ(report->findings.size(), 2u);
  const auto& mps = report->findings[0];
  EXPECT_EQ(mps.document, 1u);
  EXPECT_EQ(mps.object, "ResourceClaimTemplate ml/mps");
  EXPECT_EQ(mps.path, "spec.spec.devices.config[0].opaque.parameters.sharing.mpsConfig.defaultActiveThreadPercentage");
  EXPECT_NE(mps.message.find("must not be greater than 100"), std::string::npos);
  const auto& typo = report->findings[1];
  EXPECT_EQ(typo.document, 4u);  // the empty third document still counts in the stream's numbering
  EXPECT_EQ(typo.object, "List");
  EXPECT_EQ(typo.path, "items[0].spec.devices.config[0].opaque.parameters.sharingPolicy");
}

TEST(ManifestCheck, ScalarsResolveAsKubectlSendsThem) {
  // domainID: 123 unquoted is a number, which the strict decoder refuses as kubectl's JSON would be.
  constexpr std::string_view kNumber = R"(kind: ResourceClaim
spec: {devices: {config: [{opaque: {driver: compute-domain.nvidia.com, parameters:
  {apiVersion: resource.nvidia.com/v1beta1, kind: ComputeDomainDaemonConfig, domainID: 123}}}]}}
)";
  auto report = check_manifests(kNumber, kAllGates);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_NE(report->findings[0].message.find("cannot unmarshal number into Go struct field "
                                             "ComputeDomainDaemonConfig.domainID of type string"),
            std::string::npos);
}

TEST(ManifestCheck, TextThatIsNoYamlIsAnError) {
  auto report = check_manifests("kind: [unclosed", kAllGates);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("not YAML or JSON"), std::string::npos);
}

TEST(ManifestCheck, AliasesThatExpandWithoutBoundAreRefused) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    const auto prev = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev + ", " + prev + ", " + prev + ", " +
            prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + "]\n";
  }
  auto report = check_manifests(bomb, kAllGates);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("expands to more than 1000000 values (YAML aliases?)"), std::string::npos);
  auto deep = check_manifests(std::string(1500, '[') + std::string(1500, ']'), kAllGates);
  EXPECT_FALSE(deep.ok());
}

TEST(ManifestCheck, ABareClaimSpecIsCheckedToo) {
  auto report = check_manifests(R"({"devices": {"config": [{"opaque": {"driver": "gpu.nvidia.com",
      "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "Nope"}}}]}})",
                                kAllGates);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_EQ(report->findings[0].path, "devices.config[0].opaque.parameters.kind");
}

}  // namespace
}  // namespace nvdra::admission
