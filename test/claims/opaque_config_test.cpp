// Decoding, Normalize and Validate of opaque configs: one case per rule and per upstream message
// (../shared/reference/upstream-driver.md §3.1–3.2 and the seed's fabricTopologyConfig).
#include <gtest/gtest.h>

#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::claims {
namespace {

ConfigGates all_gates() { return ConfigGates{true, true, true, true}; }

struct DecodeErrorCase {
  const char* name;
  const char* json;
  const char* message;  // must be contained in the error
  const char* field;    // Error::field
};

class DecodeError : public ::testing::TestWithParam<DecodeErrorCase> {};

TEST_P(DecodeError, IsRejectedNamingTheField) {
  const auto& c = GetParam();
  auto r = decode_opaque_config(c.json);
  ASSERT_FALSE(r.ok()) << c.json;
  EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().field, c.field);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Strict, DecodeError,
    ::testing::Values(
        DecodeErrorCase{"UnknownTopLevelField",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharng":{}})",
                        "strict decoding error: unknown field \"sharng\"", "sharng"},
        DecodeErrorCase{"UnknownNestedFieldNamesFullPath",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS",
                            "mpsConfig":{"defaultActivThreadPercentage":5}}})",
                        "strict decoding error: unknown field \"sharing.mpsConfig.defaultActivThreadPercentage\"",
                        "sharing.mpsConfig.defaultActivThreadPercentage"},
        DecodeErrorCase{"DuplicateField",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",
                            "sharing":{"strategy":"MPS","strategy":"TimeSlicing"}})",
                        "strict decoding error: duplicate field \"sharing.strategy\"", "sharing.strategy"},
        DecodeErrorCase{"FieldNamesAreCaseSensitive",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","Sharing":{}})",
                        "unknown field \"Sharing\"", "Sharing"},
        DecodeErrorCase{"MigConfigHasNoTimeSlicingConfig",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig",
                            "sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}})",
                        "unknown field \"sharing.timeSlicingConfig\"", "sharing.timeSlicingConfig"},
        DecodeErrorCase{"UnknownVfioField",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"mode":"x"}})",
                        "unknown field \"iommu.mode\"", "iommu.mode"},
        DecodeErrorCase{"UnknownFabricField",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",
                            "fabricTopologyConfig":{"strategy":"Auto","size":4}})",
                        "unknown field \"fabricTopologyConfig.size\"", "fabricTopologyConfig.size"},
        DecodeErrorCase{"MissingKind", R"({"apiVersion":"resource.nvidia.com/v1beta1"})", "Object 'Kind' is missing in",
                        "kind"},
        DecodeErrorCase{"MissingApiVersion", R"({"kind":"GpuConfig"})", "Object 'apiVersion' is missing in",
                        "apiVersion"},
        DecodeErrorCase{"UnknownKind", R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GPUConfig"})",
                        "no kind \"GPUConfig\" is registered for version \"resource.nvidia.com/v1beta1\"", "kind"},
        DecodeErrorCase{"UnknownApiVersion", R"({"apiVersion":"nvidia.com/v1beta1","kind":"GpuConfig"})",
                        "no kind \"GpuConfig\" is registered for version \"nvidia.com/v1beta1\"", "apiVersion"},
        DecodeErrorCase{"KindOfWrongType", R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":7})",
                        "couldn't get version/kind", "kind"},
        DecodeErrorCase{"NotJson", R"({"apiVersion":)", "couldn't get version/kind; json parse error", ""},
        DecodeErrorCase{"NotAnObject", R"([1,2])", "cannot unmarshal array", ""},
        DecodeErrorCase{"StrategyOfWrongType",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":1}})",
                        "json: cannot unmarshal number into Go struct field GpuConfig.sharing.strategy of type string",
                        "sharing.strategy"},
        DecodeErrorCase{"PercentageNotAnInteger",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS",
                            "mpsConfig":{"defaultActiveThreadPercentage":50.5}}})",
                        "of type int", "sharing.mpsConfig.defaultActiveThreadPercentage"},
        DecodeErrorCase{"BadQuantity",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS",
                            "mpsConfig":{"defaultPinnedDeviceMemoryLimit":"lots"}}})",
                        "quantities must match the regular expression", "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit"},
        DecodeErrorCase{"BadQuantitySuffix",
                        R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS",
                            "mpsConfig":{"defaultPerDevicePinnedMemoryLimit":{"0":"1Kii"}}}})",
                        "unable to parse quantity's suffix", "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.0"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(OpaqueConfigDecode, AnUnknownFieldListsWhatItsObjectTakesAfterUpstreamsWords) {
  auto top = decode_opaque_config(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","x":1})");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().message,
            "strict decoding error: unknown field \"x\"; allowed fields: apiVersion, kind, iommu");
  // Two objects with unknown fields: each object's list once, in the order found; a duplicate adds none.
  auto two = decode_opaque_config(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig",
    "sharng":{},"sharing":{"strategy":"MPS","strategy":"MPS","interval":"Long","mps":{}},"other":2})");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message,
            "strict decoding error: unknown field \"sharng\", duplicate field \"sharing.strategy\", unknown field "
            "\"sharing.interval\", unknown field \"sharing.mps\", unknown field \"other\"; allowed fields: "
            "apiVersion, kind, sharing; allowed fields of sharing: strategy, mpsConfig");
  EXPECT_EQ(two.error().field, "sharng");
  auto dup = decode_opaque_config(
      R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig","domainID":"a","domainID":"b"})");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "strict decoding error: duplicate field \"domainID\"");
}

TEST(OpaqueConfigDecode, FullGpuConfigKeepsEveryField) {
  auto r = decode_opaque_config(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",
    "sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"4Gi",
      "defaultPerDevicePinnedMemoryLimit":{"GPU-a":"1Gi","1":2048},"multiUser":true}},
    "fabricTopologyConfig":{"strategy":"Manual","partitionSize":4,"virtualizationModel":"SharedNVSwitch",
      "minBandwidth":600.0,"maxLatency":0.1,"partitionIDs":["partition-1"]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& gpu = std::get<GpuConfig>(*r);
  ASSERT_TRUE(gpu.sharing && gpu.sharing->mps_config);
  EXPECT_EQ(gpu.sharing->strategy, "MPS");
  EXPECT_EQ(gpu.sharing->mps_config->default_active_thread_percentage, 50);
  EXPECT_EQ(gpu.sharing->mps_config->default_pinned_device_memory_limit, "4Gi");
  EXPECT_EQ(gpu.sharing->mps_config->default_per_device_pinned_memory_limit,
            (std::map<std::string, std::string>{{"GPU-a", "1Gi"}, {"1", "2048"}}));
  EXPECT_TRUE(gpu.sharing->mps_config->multi_user);
  ASSERT_TRUE(gpu.fabric_topology_config);
  EXPECT_EQ(gpu.fabric_topology_config->partition_ids, std::vector<std::string>{"partition-1"});
  EXPECT_EQ(gpu.fabric_topology_config->min_bandwidth, 600.0);
  EXPECT_EQ(gpu.fabric_topology_config->partition_size, 4);
}

TEST(OpaqueConfigDecode, NullMeansAbsent) {
  auto r = decode_opaque_config(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":null})");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(std::get<GpuConfig>(*r).sharing.has_value());
}

TEST(OpaqueConfigDecode, LenientModeDropsUnknownFieldsAndLastDuplicateWins) {
  auto r = decode_opaque_config(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig",
    "domainID":"a","domainID":"b","extra":1})",
                                DecodeMode::kLenient);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<ComputeDomainChannelConfig>(*r).domain_id, "b");
}

TEST(OpaqueConfigDecode, ComputeDomainKindDecodesAsUnrecognizedObject) {
  auto r = decode_opaque_config(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomain","spec":{}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(kind_name(*r), "ComputeDomain");
  auto s = validate(*r, all_gates());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "runtime object is not a recognized configuration");
}

TEST(OpaqueConfigDecode, OversizedInputIsRefusedBeforeParsing) {
  std::string big(kMaxOpaqueConfigBytes + 1, ' ');
  auto r = decode_opaque_config(big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("more than the 65536 accepted"), std::string::npos);
}

TEST(OpaqueConfigDecode, AQuotedInputCutAtItsLimitKeepsWholeCharacters) {
  // The 256-byte cut falls on the second byte of a two-byte character (Đ, C4 90): the quote ends
  // before it, so the message stays UTF-8 (fuzz_admission_review: the denial was not JSON any more).
  std::string json = R"({"kind":"GpuConfig","x":")";
  json += std::string(255 - json.size(), 'a') + "\xC4\x90" + "\"}";
  auto r = decode_opaque_config(json);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  ASSERT_NE(m.find("Object 'apiVersion' is missing in"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string(10, 'a') + "\xE2\x80\xA6'"), std::string::npos) << "cut before the character: " << m;
  EXPECT_EQ(m.find('\xC4'), std::string::npos) << m;
}

// ---- Normalize -------------------------------------------------------------------------------

OpaqueConfig decoded(const char* json) {
  auto r = decode_opaque_config(json);
  if (!r.ok()) throw std::runtime_error(r.error().message);
  return std::move(r).value();
}

TEST(OpaqueConfigNormalize, TimeSlicingGetsTheDefaultIntervalWhenTheGateIsOn) {
  auto c = decoded(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}})");
  auto off = c;
  normalize(c, all_gates());
  EXPECT_EQ(std::get<GpuConfig>(c).sharing->time_slicing_config->interval, "Default");
  normalize(off, ConfigGates{});
  EXPECT_FALSE(std::get<GpuConfig>(off).sharing->time_slicing_config.has_value()) << "gate off: left alone";
}

TEST(OpaqueConfigNormalize, MpsGetsAnEmptyMpsConfigForGpuAndMig) {
  auto gpu = decoded(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}})");
  auto mig = decoded(R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}})");
  normalize(gpu, all_gates());
  normalize(mig, all_gates());
  EXPECT_EQ(std::get<GpuConfig>(gpu).sharing->mps_config, MpsConfig{});
  EXPECT_EQ(std::get<MigDeviceConfig>(mig).sharing->mps_config, MpsConfig{});
}

TEST(OpaqueConfigNormalize, VfioGetsLegacyOnlyIommuDefaults) {
  OpaqueConfig absent = VfioDeviceConfig{};
  normalize(absent, ConfigGates{});
  EXPECT_EQ(std::get<VfioDeviceConfig>(absent).iommu, (IommuConfig{"LegacyOnly", false}));
  OpaqueConfig empty = VfioDeviceConfig{IommuConfig{"", true}};
  normalize(empty, ConfigGates{});
  EXPECT_EQ(std::get<VfioDeviceConfig>(empty).iommu, (IommuConfig{"LegacyOnly", true}));
}

TEST(OpaqueConfigNormalize, FabricVirtualizationModelDefaultsToBareMetal) {
  OpaqueConfig c = GpuConfig{std::nullopt, FabricTopologyConfig{"Auto", 4, "", {}, {}, {}}};
  normalize(c, all_gates());
  EXPECT_EQ(std::get<GpuConfig>(c).fabric_topology_config->virtualization_model, "BareMetal");
}

// ---- Validate --------------------------------------------------------------------------------

struct ValidateCase {
  const char* name;
  const char* json;
  ConfigGates gates;
  const char* message;  // "" = valid
  const char* field;
};

class Validate : public ::testing::TestWithParam<ValidateCase> {};

TEST_P(Validate, FollowsUpstreamRules) {
  const auto& c = GetParam();
  auto config = decoded(c.json);
  normalize(config, c.gates);
  auto s = validate(config, c.gates);
  if (std::string(c.message).empty()) {
    EXPECT_TRUE(s.ok()) << s.error().message;
    return;
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, c.message);
  EXPECT_EQ(s.error().field, c.field);
}

#define GPU(body) R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",)" body "}"
constexpr ConfigGates kNoGates{};
constexpr ConfigGates kAll{true, true, true, true};

INSTANTIATE_TEST_SUITE_P(
    Rules, Validate,
    ::testing::Values(
        ValidateCase{"ExclusiveGpuIsValid", GPU(R"("sharing":null)"), kNoGates, "", ""},
        ValidateCase{"TimeSlicingNeedsItsGate", GPU(R"("sharing":{"strategy":"TimeSlicing"})"), kNoGates,
                     "\"TimeSlicing\" is selected as the GPU sharing strategy, but the \"TimeSlicingSettings\" feature "
                     "gate is not enabled",
                     "sharing.strategy"},
        ValidateCase{"MpsNeedsItsGate", GPU(R"("sharing":{"strategy":"MPS"})"), kNoGates,
                     "\"MPS\" is selected as the GPU sharing strategy, but the \"MPSSupport\" feature gate is not enabled",
                     "sharing.strategy"},
        ValidateCase{"UnknownStrategy", GPU(R"("sharing":{"strategy":"Spatial"})"), kAll,
                     "unknown GPU sharing strategy: Spatial, supported GPU sharing strategies: TimeSlicing, MPS",
                     "sharing.strategy"},
        ValidateCase{"EveryIntervalIsAccepted", GPU(R"("sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Medium"}})"),
                     kAll, "", ""},
        ValidateCase{"UnknownInterval", GPU(R"("sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Huge"}})"),
                     kAll, "unknown time-slice interval: Huge, supported time-slice intervals: Default, Short, Medium, Long",
                     "sharing.timeSlicingConfig.interval"},
        ValidateCase{"EmptyTimeSlicingConfigIsAnErrorNotACrash",
                     GPU(R"("sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{}})"), kAll,
                     "timeSlicingConfig is present but has no interval, supported time-slice intervals: Default, Short, "
                     "Medium, Long",
                     "sharing.timeSlicingConfig.interval"},
        ValidateCase{"NegativeActiveThreads",
                     GPU(R"("sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":-1}})"), kAll,
                     "active thread percentage must not be negative", "sharing.mpsConfig.defaultActiveThreadPercentage"},
        ValidateCase{"TooManyActiveThreads",
                     GPU(R"("sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":101}})"), kAll,
                     "active thread percentage must not be greater than 100",
                     "sharing.mpsConfig.defaultActiveThreadPercentage"},
        ValidateCase{"HundredPercentIsValid",
                     GPU(R"("sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":100}})"), kAll, "", ""},
        ValidateCase{"MixedStrategyPassesValidate",  // fails later, at apply time (sharing_plan)
                     GPU(R"("sharing":{"strategy":"TimeSlicing","mpsConfig":{}})"), kAll, "", ""},
        ValidateCase{"MigStrategyNeedsItsGate",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}})",
                     kNoGates,
                     "\"MPS\" is selected as the GPU sharing strategy, but the \"MPSSupport\" feature gate is not enabled",
                     "sharing.strategy"},
        ValidateCase{"MigTimeSlicingIsValid",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"TimeSlicing"}})",
                     kAll, "", ""},
        ValidateCase{"UnknownIommuPolicy",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"Fast"}})",
                     kAll, "unknown IOMMU backend policy: Fast, supported IOMMU backend policies: LegacyOnly, PreferIommuFD",
                     "iommu.backendPolicy"},
        ValidateCase{"PreferIommuFDIsValid",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig","iommu":{"backendPolicy":"PreferIommuFD","enableAPIDevice":true}})",
                     kNoGates, "", ""},
        ValidateCase{"ChannelNeedsDomainId",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig"})", kNoGates,
                     "domainID cannot be empty", "domainID"},
        ValidateCase{"ChannelAllocationModeAll",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"u","allocationMode":"All"})",
                     kNoGates, "", ""},
        ValidateCase{"ChannelUnknownAllocationMode",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"u","allocationMode":"Many"})",
                     kNoGates, "unknown allocation mode: Many, supported allocation modes: Single, All", "allocationMode"},
        ValidateCase{"DaemonNeedsDomainId",
                     R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig","domainID":""})",
                     kNoGates, "domainID cannot be empty", "domainID"},
        ValidateCase{"FabricNeedsItsGate", GPU(R"("fabricTopologyConfig":{"strategy":"Auto"})"),
                     ConfigGates{true, true, true, false},
                     "fabricTopologyConfig is set, but the \"FabricTopologySupport\" feature gate is not enabled",
                     "fabricTopologyConfig"},
        ValidateCase{"FabricAutoIsValid",
                     GPU(R"("fabricTopologyConfig":{"strategy":"Auto","partitionSize":8,"virtualizationModel":"VGPU"})"),
                     kAll, "", ""},
        ValidateCase{"FabricUnknownStrategy", GPU(R"("fabricTopologyConfig":{"strategy":"Best"})"), kAll,
                     "unknown fabric topology strategy: \"Best\", supported fabric topology strategies: Auto, Manual, Disabled",
                     "fabricTopologyConfig.strategy"},
        ValidateCase{"FabricMissingStrategy", GPU(R"("fabricTopologyConfig":{"partitionSize":2})"), kAll,
                     "unknown fabric topology strategy: \"\", supported fabric topology strategies: Auto, Manual, Disabled",
                     "fabricTopologyConfig.strategy"},
        ValidateCase{"FabricBadPartitionSize", GPU(R"("fabricTopologyConfig":{"strategy":"Auto","partitionSize":3})"),
                     kAll, "unsupported partition size: 3, supported partition sizes: 2, 4, 8",
                     "fabricTopologyConfig.partitionSize"},
        ValidateCase{"FabricBadVirtualizationModel",
                     GPU(R"("fabricTopologyConfig":{"strategy":"Auto","virtualizationModel":"vGPU"})"), kAll,
                     "unknown virtualization model: \"vGPU\", supported virtualization models: BareMetal, "
                     "FullPassthrough, SharedNVSwitch, VGPU",
                     "fabricTopologyConfig.virtualizationModel"},
        ValidateCase{"FabricNegativeBandwidth",
                     GPU(R"("fabricTopologyConfig":{"strategy":"Auto","minBandwidth":-1})"), kAll,
                     "minBandwidth must not be negative (GB/s)", "fabricTopologyConfig.minBandwidth"},
        ValidateCase{"FabricNegativeLatency", GPU(R"("fabricTopologyConfig":{"strategy":"Auto","maxLatency":-0.5})"),
                     kAll, "maxLatency must not be negative (ms)", "fabricTopologyConfig.maxLatency"},
        ValidateCase{"FabricManualNeedsPartitionIds", GPU(R"("fabricTopologyConfig":{"strategy":"Manual"})"), kAll,
                     "partitionIDs must list at least one partition when the fabric topology strategy is Manual",
                     "fabricTopologyConfig.partitionIDs"},
        ValidateCase{"FabricEmptyPartitionId",
                     GPU(R"("fabricTopologyConfig":{"strategy":"Manual","partitionIDs":["p1",""]})"), kAll,
                     "partition IDs must not be empty", "fabricTopologyConfig.partitionIDs[1]"},
        ValidateCase{"FabricPartitionIdsUnderAuto",
                     GPU(R"("fabricTopologyConfig":{"strategy":"Auto","partitionIDs":["partition-1"]})"), kAll,
                     "partitionIDs is set, but the fabric topology strategy is Auto, which picks the partition itself "
                     "(by partitionSize); set strategy: Manual to activate listed partitions, or remove partitionIDs",
                     "fabricTopologyConfig.partitionIDs"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nvdra::claims
