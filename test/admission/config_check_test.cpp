// The config check shared by the webhook and `nvdractl validate`: prepare's decoder and rules, the
// issue's three typos, and the paths it reports.
#include "agent/admission/config_check.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "test/admission/review_builder.hpp"

namespace nvdra::admission {
namespace {

constexpr claims::ConfigGates kAllGates{true, true, true, true};

PlacedConfig gpu(boost::json::object body, std::string_view kind = "GpuConfig") {
  return {"spec.devices.config[0].opaque.parameters", "gpu.nvidia.com",
          boost::json::serialize(test::gpu_config(std::move(body), kind))};
}

TEST(ConfigCheck, TheIssuesThreeTyposAreEachRefusedWithFieldAndAllowedValues) {
  const std::vector<PlacedConfig> configs = {
      gpu({{"sharingPolicy", "MPS"}}),
      gpu({{"sharing", {{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 120}}}}}}),
      gpu({{"fabricTopologyConfig", {{"strategy", "Auto"}, {"partitionIDs", {"p1"}}}}}),
  };
  const auto problems = check_configs(configs, kAllGates);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].path, "spec.devices.config[0].opaque.parameters.sharingPolicy");
  EXPECT_NE(problems[0].message.find("unknown field \"sharingPolicy\""), std::string::npos);
  EXPECT_EQ(problems[1].path, "spec.devices.config[0].opaque.parameters.sharing.mpsConfig.defaultActiveThreadPercentage");
  EXPECT_NE(problems[1].message.find("must not be greater than 100"), std::string::npos);
  EXPECT_EQ(problems[2].path, "spec.devices.config[0].opaque.parameters.fabricTopologyConfig.partitionIDs");
  EXPECT_NE(problems[2].message.find("set strategy: Manual"), std::string::npos);
  EXPECT_EQ(denial_message(problems).rfind("3 configs failed to validate: error decoding object at ", 0), 0u);
}

TEST(ConfigCheck, EveryKindOfBothDriversIsCheckedByItsOwnRules) {
  const claims::ConfigGates gates = kAllGates;
  EXPECT_FALSE(check_config(gpu({{"sharing", {{"strategy", "TimeSlicing"}}}}), gates));
  EXPECT_FALSE(check_config(gpu({{"sharing", {{"strategy", "MPS"}}}}, "MigDeviceConfig"), gates));
  EXPECT_TRUE(check_config(gpu({{"sharing", {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", boost::json::object{}}}}},
                               "MigDeviceConfig"),
                           gates));  // MIG sharing has no timeSlicingConfig
  EXPECT_FALSE(check_config(gpu({{"iommu", {{"backendPolicy", "PreferIommuFD"}}}}, "VfioDeviceConfig"), gates));
  const auto vfio = check_config(gpu({{"iommu", {{"backendPolicy", "Iommufd"}}}}, "VfioDeviceConfig"), gates);
  ASSERT_TRUE(vfio);
  EXPECT_NE(vfio->message.find("supported IOMMU backend policies: LegacyOnly, PreferIommuFD"), std::string::npos);
  PlacedConfig daemon{"p", "compute-domain.nvidia.com", R"({"apiVersion":"resource.nvidia.com/v1beta1",
      "kind":"ComputeDomainDaemonConfig","domainID":"d"})"};
  EXPECT_FALSE(check_config(daemon, gates));
  daemon.parameters = R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig",
      "domainID":"d","allocationMode":"Some"})";
  const auto channel = check_config(daemon, gates);
  ASSERT_TRUE(channel);
  EXPECT_EQ(channel->path, "p.allocationMode");
  EXPECT_NE(channel->message.find("supported allocation modes: Single, All"), std::string::npos);
  daemon.parameters = R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomain"})";
  EXPECT_TRUE(check_config(daemon, gates));  // registered in the scheme, but no device config
}

TEST(ConfigCheck, FabricTopologyConfigNeedsItsGate) {
  auto gates = kAllGates;
  gates.fabric_topology_support = false;
  const auto p = check_config(gpu({{"fabricTopologyConfig", {{"strategy", "Auto"}}}}), gates);
  ASSERT_TRUE(p);
  EXPECT_NE(p->message.find("\"FabricTopologySupport\" feature gate is not enabled"), std::string::npos);
}

TEST(ConfigCheck, CollectsOnlyNvdrasDriversWithTheirPaths) {
  const auto spec = boost::json::serialize(test::claim_spec({
      test::opaque("example.com/other", boost::json::object{{"x", 1}}),
      boost::json::object{{"requests", boost::json::array{"gpu"}}},  // no opaque: nothing to check
      test::opaque("compute-domain.nvidia.com", boost::json::object{}),
  }));
  simdjson::dom::parser parser;
  std::vector<PlacedConfig> out;
  ASSERT_TRUE(collect_configs(parser.parse(spec), "spec", out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "spec.devices.config[2].opaque.parameters");
  EXPECT_EQ(out[0].driver, "compute-domain.nvidia.com");
  EXPECT_EQ(out[0].parameters, "{}");
}

TEST(ConfigCheck, ASpecOfTheWrongShapeNamesTheField) {
  simdjson::dom::parser parser;
  std::vector<PlacedConfig> out;
  const auto s = collect_configs(parser.parse(std::string_view(R"({"devices":{"config":[1]}})")), "spec.spec", out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "spec.spec.devices.config[0]");
}

}  // namespace
}  // namespace nvdra::admission

namespace nvdra::admission {
namespace {

// A spec whose requests name device classes; one config per (kind, requests).
std::vector<ConfigProblem> check_spec(std::string_view spec_json) {
  simdjson::dom::parser parser;
  std::vector<PlacedConfig> configs;
  EXPECT_TRUE(collect_configs(parser.parse(spec_json), "spec", configs).ok());
  return check_configs(configs, claims::ConfigGates{true, true, true, true});
}

TEST(ConfigCheck, AKindThatCannotConfigureTheRequestsDevicesIsRefusedAsAtPrepare) {
  const auto problems = check_spec(R"({"devices": {
    "requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com"}},
                 {"name": "old", "deviceClassName": "gpu.nvidia.com"},
                 {"name": "any", "firstAvailable": [{"name": "small", "deviceClassName": "mig.nvidia.com"},
                                                    {"name": "big", "deviceClassName": "gpu.nvidia.com"}]},
                 {"name": "mine", "exactly": {"deviceClassName": "example.com-custom-gpus"}},
                 {"name": "channel", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}],
    "config": [
      {"requests": ["mig"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}}},
      {"requests": ["mig", "any/small"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"}}},
      {"requests": ["old"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"}}},
      {"requests": ["any/big", "mine", "channel"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}}},
      {"requests": ["any/small"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"}}},
      {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"}}}
    ]}})");
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].path, "spec.devices.config[0].opaque.parameters.kind");
  EXPECT_EQ(problems[0].message,
            "object at spec.devices.config[0].opaque.parameters is invalid: kind: cannot apply GpuConfig to request "
            "\"mig\" of device class mig.nvidia.com (devices of type \"mig\", configured by MigDeviceConfig)");
  EXPECT_EQ(problems[1].path, "spec.devices.config[2].opaque.parameters.kind");  // v1beta1's deviceClassName
  EXPECT_EQ(problems[2].path, "spec.devices.config[4].opaque.parameters.kind");  // a firstAvailable subrequest
}

}  // namespace
}  // namespace nvdra::admission
