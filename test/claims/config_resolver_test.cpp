// Which config applies to which device (reference §3.3): precedence, type fit, errors, groups.
#include <gtest/gtest.h>

#include "agent/claims/config_resolver.hpp"

namespace nvdra::claims {
namespace {

constexpr const char* kGpuTimeSlicing =
    R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}})";
constexpr const char* kGpuMps = R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}})";
constexpr const char* kMigMps =
    R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}})";
constexpr const char* kChannel =
    R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"cd-uid"})";
constexpr const char* kVfio = R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig"})";

ConfigEntry entry(const char* source, std::vector<std::string> requests, const char* json,
                  std::string driver = "gpu.nvidia.com") {
  return ConfigEntry{source, std::move(requests), OpaqueParameters{std::move(driver), json}};
}

ResolveInput gpu_claim(std::vector<AllocationResult> results, std::vector<ConfigEntry> configs) {
  ResolveInput in;
  in.driver = std::string(kGpuDriverName);
  in.claim = ClaimRef{"ns", "claim", "uid-1"};
  in.results = std::move(results);
  in.configs = std::move(configs);
  in.gates = ConfigGates{true, true, false, false};
  return in;
}

AllocationResult gpu(std::string request, std::string device) {
  return {std::move(request), "gpu.nvidia.com", "node", std::move(device), DeviceType::kGpu};
}
AllocationResult mig(std::string request, std::string device) {
  return {std::move(request), "gpu.nvidia.com", "node", std::move(device), DeviceType::kMig};
}

const GpuConfig& gpu_config_of(const Resolution& r, std::size_t result) {
  return std::get<GpuConfig>(r.groups.at(*r.group_of_result.at(result)).config);
}

TEST(ConfigResolver, UnconfiguredDevicesShareTheBuiltInDefaultGroup) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0"), gpu("b", "gpu-1"), mig("c", "gpu-2-mig-1g10gb-19-0")}, {}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->groups.size(), 2u);
  EXPECT_EQ(r->groups[0].origin, ConfigOrigin::kDefault);
  EXPECT_EQ(r->groups[0].results, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(std::holds_alternative<MigDeviceConfig>(r->groups[1].config));
}

TEST(ConfigResolver, ClaimConfigBeatsClassConfigWhateverTheListOrder) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromClaim", {}, kGpuMps), entry("FromClass", {}, kGpuTimeSlicing)}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(gpu_config_of(*r, 0).sharing->strategy, "MPS");
  EXPECT_EQ(r->groups[0].origin, ConfigOrigin::kFromClaim);
  EXPECT_EQ(r->groups[0].config_index, 0u);
}

TEST(ConfigResolver, LaterEntryWinsEvenIfRequestLess) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromClaim", {"a"}, kGpuMps), entry("FromClaim", {}, kGpuTimeSlicing)}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(gpu_config_of(*r, 0).sharing->strategy, "TimeSlicing");
}

TEST(ConfigResolver, RequestSpecificConfigAppliesOnlyToItsRequest) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0"), gpu("b", "gpu-1")}, {entry("FromClaim", {"b"}, kGpuMps)}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(gpu_config_of(*r, 0).sharing.has_value());
  EXPECT_EQ(gpu_config_of(*r, 1).sharing->strategy, "MPS");
  EXPECT_NE(r->group_of_result[0], r->group_of_result[1]);
}

TEST(ConfigResolver, NormalizesTheWinningConfig) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromClaim", {}, kGpuMps)}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(gpu_config_of(*r, 0).sharing->mps_config.has_value());
}

TEST(ConfigResolver, RequestLessConfigOfTheWrongTypeIsSkipped) {
  auto r = resolve_configs(gpu_claim({mig("a", "gpu-0-mig-1g10gb-19-0")}, {entry("FromClaim", {}, kGpuMps)}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->groups[0].origin, ConfigOrigin::kDefault);
  EXPECT_TRUE(std::holds_alternative<MigDeviceConfig>(r->groups[0].config));
}

TEST(ConfigResolver, RequestNamedConfigOfTheWrongTypeFailsTheClaim) {
  auto r = resolve_configs(gpu_claim({mig("a", "gpu-0-mig-1g10gb-19-0")}, {entry("FromClaim", {"a"}, kGpuMps)}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot apply GpuConfig to device \"gpu-0-mig-1g10gb-19-0\" of type \"mig\" (request: a)");
  EXPECT_EQ(r.error().claim, "ns/claim (uid-1)");
  EXPECT_EQ(r.error().field, "status.allocation.devices.config[0].opaque.parameters.kind");
}

TEST(ConfigResolver, MigConfigOnAFullGpuFailsTheClaim) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromClass", {"a"}, kMigMps)}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot apply MigDeviceConfig to device \"gpu-0\" of type \"gpu\" (request: a)");
}

TEST(ConfigResolver, SubrequestIsMatchedVerbatimLikeUpstream) {
  auto r = resolve_configs(gpu_claim({gpu("main/sub", "gpu-0")}, {entry("FromClaim", {"main"}, kGpuMps)}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(gpu_config_of(*r, 0).sharing.has_value()) << "\"main\" does not match \"main/sub\"";
  auto exact = resolve_configs(gpu_claim({gpu("main/sub", "gpu-0")}, {entry("FromClaim", {"main/sub"}, kGpuMps)}));
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE(gpu_config_of(*exact, 0).sharing.has_value());
  EXPECT_EQ(base_request("main/sub"), "main");
  EXPECT_EQ(base_request("main"), "main");
}

TEST(ConfigResolver, OtherDriversConfigsAreNeverDecoded) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromClaim", {}, "not json", "other.example.com")}));
  ASSERT_TRUE(r.ok());
}

TEST(ConfigResolver, OtherDriversResultsHaveNoGroup) {
  auto other = gpu("x", "dev-9");
  other.driver = "other.example.com";
  auto r = resolve_configs(gpu_claim({other, gpu("a", "gpu-0")}, {}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->group_of_result[0].has_value());
  EXPECT_TRUE(r->group_of_result[1].has_value());
}

TEST(ConfigResolver, UndecodableConfigFailsTheClaimNamingTheField) {
  auto r = resolve_configs(gpu_claim(
      {gpu("a", "gpu-0")},
      {entry("FromClass", {}, kGpuMps),
       entry("FromClaim", {"zzz"},
             R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActivThreadPercentage":1}}})")}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "error decoding config parameters: strict decoding error: unknown field "
            "\"sharing.mpsConfig.defaultActivThreadPercentage\"; allowed fields of sharing.mpsConfig: "
            "defaultActiveThreadPercentage, defaultPinnedDeviceMemoryLimit, defaultPerDevicePinnedMemoryLimit, "
            "multiUser");
  EXPECT_EQ(r.error().field, "status.allocation.devices.config[1].opaque.parameters.sharing.mpsConfig.defaultActivThreadPercentage");
}

TEST(ConfigResolver, InvalidSourceFailsTheClaim) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromNowhere", {}, kGpuMps)}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("invalid config source: FromNowhere"), std::string::npos);
}

TEST(ConfigResolver, NonOpaqueConfigFailsTheClaim) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {ConfigEntry{"FromClaim", {}, std::nullopt}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "only opaque parameters are supported by this driver");
}

TEST(ConfigResolver, WinningConfigThatFailsValidateFailsTheClaim) {
  auto in = gpu_claim({gpu("a", "gpu-0")}, {entry("FromClaim", {}, kGpuTimeSlicing)});
  in.gates.time_slicing_settings = false;
  auto r = resolve_configs(in);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("feature gate is not enabled"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().field, "status.allocation.devices.config[0].opaque.parameters.sharing.strategy");
}

TEST(ConfigResolver, ForeignKindThatWinsIsNotRecognized) {
  auto r = resolve_configs(gpu_claim({gpu("a", "gpu-0")}, {entry("FromClaim", {"a"}, kChannel)}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "runtime object is not a recognized configuration");
}

TEST(ConfigResolver, ComputeDomainDriverFailsUnconfiguredChannel) {
  ResolveInput in;
  in.driver = std::string(kComputeDomainDriverName);
  in.claim = ClaimRef{"ns", "cd", "u2"};
  in.results = {{"channel", "compute-domain.nvidia.com", "node", "channel-0", DeviceType::kChannel}};
  auto r = resolve_configs(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "error validating ComputeDomainChannelConfig: domainID cannot be empty");
  in.configs = {entry("FromClaim", {"channel"}, kChannel, "compute-domain.nvidia.com")};
  auto ok = resolve_configs(in);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(std::get<ComputeDomainChannelConfig>(ok->groups[0].config).domain_id, "cd-uid");
}

TEST(ConfigResolver, ComputeDomainConfigOfTheWrongTypeNamesTheRequest) {
  ResolveInput in;
  in.driver = std::string(kComputeDomainDriverName);
  in.results = {{"daemon", "compute-domain.nvidia.com", "node", "daemon-0", DeviceType::kDaemon}};
  in.configs = {entry("FromClaim", {"daemon"}, kChannel, "compute-domain.nvidia.com")};
  auto r = resolve_configs(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot apply ComputeDomainChannelConfig to request: daemon");
}

TEST(ConfigResolver, VfioDefaultExistsOnlyWithPassthroughAndOneGroupPerClaim) {
  AllocationResult v0{"a", "gpu.nvidia.com", "node", "gpu-vfio-0", DeviceType::kVfio};
  AllocationResult v1{"b", "gpu.nvidia.com", "node", "gpu-vfio-1", DeviceType::kVfio};
  auto in = gpu_claim({v0, v1}, {});
  EXPECT_FALSE(resolve_configs(in).ok()) << "no VFIO default without PassthroughSupport";
  in.gates.passthrough_support = true;
  auto one = resolve_configs(in);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->groups.size(), 1u);
  EXPECT_EQ(std::get<VfioDeviceConfig>(one->groups[0].config).iommu->backend_policy, "LegacyOnly");
}

// A VfioDeviceConfig from the claim applies to its VFIO device (PassthroughSupport acts on it).
TEST(ConfigResolver, VfioDeviceConfigAppliesToTheVfioDevice) {
  AllocationResult v0{"a", "gpu.nvidia.com", "node", "gpu-vfio-0", DeviceType::kVfio};
  auto in = gpu_claim({gpu("g", "gpu-0"), v0}, {entry("FromClass", {}, kGpuMps), entry("FromClaim", {"a"}, kVfio)});
  in.gates.passthrough_support = true;
  in.gates.mps_support = true;
  auto r = resolve_configs(in);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_TRUE(r->group_of_result[1].has_value());
  EXPECT_TRUE(std::holds_alternative<VfioDeviceConfig>(r->groups[*r->group_of_result[1]].config));
}

TEST(ConfigResolver, FabricTopologyConfigReachesItsGroupLikeAnyGpuConfig) {
  // Issue 21: the block is acted on at prepare (agent/claims/fabric_plan.hpp), so the resolver keeps
  // it in the group's config; the claim's own config wins over the class's as for sharing.
  constexpr const char* kFabric =
      R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","fabricTopologyConfig":{"strategy":"Manual","partitionIDs":["p1"]}})";
  auto in = gpu_claim({gpu("a", "gpu-0")}, {entry("FromClass", {}, kGpuMps), entry("FromClaim", {}, kFabric)});
  in.gates.fabric_topology_support = true;
  in.gates.mps_support = true;
  auto r = resolve_configs(in);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->groups.size(), 1u);
  const auto* g = std::get_if<GpuConfig>(&r->groups[0].config);
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(g->fabric_topology_config);
  EXPECT_EQ(g->fabric_topology_config->strategy, "Manual");
  EXPECT_EQ(g->fabric_topology_config->partition_ids, std::vector<std::string>{"p1"});
}

}  // namespace
}  // namespace nvdra::claims
