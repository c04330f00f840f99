#include "nvml/mock/machine_profile.hpp"

#include <gtest/gtest.h>

namespace nvdra::nvml::mock {
namespace {

std::string profile_path(const std::string& name) { return std::string(NVDRA_MOCK_PROFILES_DIR) + "/" + name + ".yaml"; }

constexpr const char* kHeader = "driverVersion: \"570.148.08\"\ncudaDriverVersion: 12080\ngpus:\n";
constexpr const char* kGpu0 =
    "  - {product: NVIDIA A100-SXM4-40GB, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: \"00000000:07:00.0\"}\n";

std::string error_of(const std::string& text) {
  auto r = parse_profile(text, "/etc/test.yaml");
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.error().message;
}

TEST(MachineProfile, ShippedProfilesParseWithTheirProductFacts) {
  for (const char* name : {"dgx-a100", "hgx-h100", "gb200-nvl", "l4"}) {
    auto p = load_profile(profile_path(name));
    ASSERT_TRUE(p.ok()) << p.error().message;
  }
  auto dgx = load_profile(profile_path("dgx-a100"));
  ASSERT_EQ(dgx->gpus.size(), 8u);
  EXPECT_FALSE(dgx->gpus[0].mig_enabled);
  EXPECT_TRUE(dgx->gpus[6].mig_enabled);
  EXPECT_EQ(dgx->gpus[6].mig_devices.size(), 3u);
  EXPECT_EQ(dgx->gpus[7].mig_devices.size(), 4u);
  auto gb = load_profile(profile_path("gb200-nvl"));
  ASSERT_EQ(gb->gpus.size(), 4u);
  EXPECT_EQ(gb->gpus[0].domain, 8u);
  ASSERT_TRUE(gb->gpus[3].fabric.has_value());
  EXPECT_EQ(gb->gpus[3].fabric->clique_id, 4026u);
  auto h100 = load_profile(profile_path("hgx-h100"));
  ASSERT_TRUE(h100->gpus[0].fabric.has_value());  // fabric-capable products default to a zero cluster
  EXPECT_EQ(h100->gpus[0].fabric->cluster_uuid, (std::array<unsigned char, 16>{}));
  EXPECT_FALSE(load_profile(profile_path("l4"))->gpus[0].product->mig_capable);
}

TEST(MachineProfile, UnknownProductNamesTheFileTheGpuTheFieldAndTheAllowedProducts) {
  const std::string msg = error_of(std::string(kHeader) + kGpu0 +
                                   "  - {product: NVIDIA A100-SXM4-80GB, uuid: GPU-00000000-0000-4000-8000-000000000002, "
                                   "pciBusId: \"00000000:0F:00.0\"}\n");
  EXPECT_NE(msg.find("/etc/test.yaml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GPU gpus[1] (GPU-00000000-0000-4000-8000-000000000002)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("field product"), std::string::npos) << msg;
  EXPECT_NE(msg.find("allowed: NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3"), std::string::npos) << msg;
}

TEST(MachineProfile, OverlappingMigPlacementsAreRejectedNamingBothInstances) {
  const std::string msg = error_of(std::string(kHeader) +
                                   "  - product: NVIDIA A100-SXM4-40GB\n"
                                   "    uuid: GPU-00000000-0000-4000-8000-000000000001\n"
                                   "    pciBusId: \"00000000:07:00.0\"\n"
                                   "    migMode: enabled\n"
                                   "    migDevices:\n"
                                   "      - {profile: 3g.20gb, placement: 0}\n"
                                   "      - {profile: 2g.10gb, placement: 2}\n");
  EXPECT_NE(msg.find("GPU gpus[0] (GPU-00000000-0000-4000-8000-000000000001)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("field migDevices[1].placement"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2g.10gb at memory slices 2-3 overlaps 3g.20gb at 0-3"), std::string::npos) << msg;
}

TEST(MachineProfile, APlacementNvmlWouldRefuseListsTheAllowedStarts) {
  const std::string msg = error_of(std::string(kHeader) +
                                   "  - {product: NVIDIA A100-SXM4-40GB, uuid: GPU-00000000-0000-4000-8000-000000000001, "
                                   "pciBusId: \"00000000:07:00.0\", migMode: enabled, migDevices: [{profile: 3g.20gb, "
                                   "placement: 1}]}\n");
  EXPECT_NE(msg.find("3g.20gb cannot start at memory slice 1 (allowed: 0, 4)"), std::string::npos) << msg;
}

TEST(MachineProfile, BadYamlNamesTheFileAndLine) {
  const std::string msg = error_of(std::string(kHeader) + "  - {product: [unclosed\n");
  EXPECT_NE(msg.find("/etc/test.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad YAML"), std::string::npos) << msg;
}

TEST(MachineProfile, FeaturesTheProductLacksAreRejected) {
  EXPECT_NE(error_of(std::string(kHeader) +
                     "  - {product: NVIDIA L4, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: "
                     "\"00000000:07:00.0\", migMode: enabled}\n")
                .find("NVIDIA L4 is not MIG capable (allowed: disabled)"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) +
                     "  - {product: NVIDIA A100-SXM4-40GB, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: "
                     "\"00000000:07:00.0\", fabric: {clusterUuid: 9c6f5af3-53bf-49b5-a436-b66766c413c3, cliqueId: 1}}\n")
                .find("field fabric"),
            std::string::npos);
}

TEST(MachineProfile, DuplicatesTyposAndBadValuesAreRejectedWithTheField) {
  EXPECT_NE(error_of(std::string(kHeader) + kGpu0 + kGpu0).find("duplicate GPU UUID"), std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) +
                     "  - {product: NVIDIA L4, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: "
                     "\"00000000:07:00.0\", migmode: enabled}\n")
                .find("field migmode: unknown field"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) +
                     "  - {product: NVIDIA L4, uuid: GPU-1, pciBusId: \"00000000:07:00.0\"}\n")
                .find("field uuid"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) +
                     "  - {product: NVIDIA L4, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: \"7:0\"}\n")
                .find("field pciBusId"),
            std::string::npos);
  auto r = parse_profile(std::string(kHeader) + kGpu0 + "  - {product: NVIDIA L4}\n", "x.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "gpus[1].uuid");
}

// The shapes of the UUIDs, bus IDs and driver version, each at its edges.
TEST(MachineProfile, IdentifiersAreCheckedAtTheirEdges) {
  const auto gpu = [](const std::string& uuid, const std::string& bus) {
    return std::string(kHeader) + "  - {product: NVIDIA L4, uuid: " + uuid + ", pciBusId: \"" + bus + "\"}\n";
  };
  const std::string uuid = "GPU-0a0b0c0d-0000-4000-8000-00000000000f";
  auto ok = parse_profile(gpu(uuid, "0001:7f:1A.7"), "x.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->gpus[0].domain, 1u);
  EXPECT_EQ(ok->gpus[0].bus, 0x7fu);
  EXPECT_EQ(ok->gpus[0].device, 0x1au);
  EXPECT_EQ(ok->gpus[0].function, 7u);
  for (const char* bad : {"GPU-0A0B0C0D-0000-4000-8000-00000000000F", "GPU-0a0b0c0d-0000-4000-8000-00000000000",
                          "GPU-0a0b0c0d00000-4000-8000-00000000000f", "gpu-0a0b0c0d-0000-4000-8000-00000000000f"})
    EXPECT_NE(error_of(gpu(bad, "0000:07:00.0")).find("field uuid"), std::string::npos) << bad;
  for (const char* bad : {"000:07:00.0", "000000000:07:00.0", "0000:07:00.8", "0000:7:00.0", "0000:07:00:0",
                          "0000:g7:00.0", "0000:07:00.00"})
    EXPECT_NE(error_of(gpu(uuid, bad)).find("field pciBusId"), std::string::npos) << bad;
  for (const char* version : {"570", "570.", ".148", "570..08", "570.148.08.1", "570.14a"}) {
    std::string text = gpu(uuid, "0000:07:00.0");
    text.replace(text.find("570.148.08"), 10, version);
    EXPECT_NE(error_of(text).find("field driverVersion"), std::string::npos) << version;
  }
  std::string two_parts = gpu(uuid, "0000:07:00.0");
  two_parts.replace(two_parts.find("570.148.08"), 10, "570.148");
  EXPECT_TRUE(parse_profile(two_parts, "x.yaml").ok());
}

TEST(MachineProfile, NamesResolveUnderTheProfileDirectoryAndPathsStayPaths) {
  EXPECT_EQ(resolve_profile_path("l4", "/p"), "/p/l4.yaml");
  EXPECT_EQ(resolve_profile_path("./my.yaml", "/p"), "./my.yaml");
  EXPECT_EQ(resolve_profile_path("/abs/x", "/p"), "/abs/x");
}

}  // namespace
}  // namespace nvdra::nvml::mock
