// ShareStep (consumable shares) and device metadata in the checkpoint: upstream's rules and encodings.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include "agent/claims/claim/device_metadata.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/claims/sharing/share_step.hpp"

namespace nvdra::claims {
namespace {

constexpr const char* kTs =
    R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}})";
constexpr const char* kTsShort =
    R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Short"}}})";
constexpr const char* kMps = R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}})";

ConfigGates gates() {
  ConfigGates g;
  g.time_slicing_settings = g.mps_support = true;
  return g;
}

ShareStep step(bool enabled = true) {
  return ShareStep(enabled, gates(), [](const std::string& d) -> std::optional<DeviceType> {
    if (d.rfind("gpu-", 0) == 0) return DeviceType::kGpu;
    return std::nullopt;
  });
}

ClaimAllocation share(const std::string& uid, const std::string& device, const char* config = nullptr) {
  ClaimAllocation a;
  a.uid = uid;
  AllocationResult r{"gpu", "gpu.nvidia.com", "node-a", device};
  r.share_id = "0b8e1f6e-0000-4000-8000-" + uid.substr(uid.size() - 1) + "00000000000";
  a.results.push_back(r);
  if (config) a.configs.push_back(ConfigEntry{"FromClaim", {}, OpaqueParameters{"gpu.nvidia.com", config}});
  return a;
}

Checkpoint holding(const ClaimAllocation& a) {
  Checkpoint cp;
  cp.claims[a.uid] = CheckpointedClaim{ClaimState::kPrepareCompleted, encode_claim_status(a), {}, "held", "default", {}};
  return cp;
}

TEST(ShareStep, SharesWithTheSameConfigPass) {
  EXPECT_TRUE(step().check(holding(share("uid-a", "gpu-0", kTs)), "uid-b", share("uid-b", "gpu-0", kTs)));
  EXPECT_TRUE(step().check(holding(share("uid-a", "gpu-0")), "uid-b", share("uid-b", "gpu-0")));
  EXPECT_TRUE(step().check(holding(share("uid-a", "gpu-0", kTs)), "uid-b", share("uid-b", "gpu-1", kTsShort)));
}

TEST(ShareStep, AConflictingConfigIsRefusedWithUpstreamsMessage) {
  auto st = step().check(holding(share("uid-a", "gpu-0", kTs)), "uid-b", share("uid-b", "gpu-0", kTsShort));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "requested device gpu-0 has conflicting configuration with already prepared claim uid-a");
  // Default config against an explicit one differs too.
  EXPECT_FALSE(step().check(holding(share("uid-a", "gpu-0")), "uid-b", share("uid-b", "gpu-0", kTs)));
}

TEST(ShareStep, MpsIsRefusedWhileSharesAreOn) {
  auto st = step().check({}, "uid-a", share("uid-a", "gpu-0", kMps));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "MPS sharing is not supported when consumable shares is enabled");
  EXPECT_TRUE(step(false).check({}, "uid-a", share("uid-a", "gpu-0", kMps)));
}

TEST(CheckpointShares, ShareIdAndMetadataAreKeptInUpstreamsFieldOrder) {
  PublishedDevice vfio;
  vfio.name = "gpu-vfio-0";
  vfio.attributes["type"] = std::string("vfio");
  vfio.attributes["iommuFDEnabled"] = false;
  vfio.attributes["resource.kubernetes.io/numaNode"] = int64_t{0};
  PreparedEntry e;
  e.uuid = "GPU-1";
  e.requests = {"gpu"};
  e.pool = "node-a";
  e.device = "gpu-0";
  e.cdi_device_ids = {"k8s.gpu.nvidia.com/claim=uid-gpu-0"};
  e.share_id = "0b8e1f6e-0000-4000-8000-000000000001";
  e.metadata = device_metadata(vfio);
  PreparedGroup g;
  g.devices.push_back(e);
  const auto json = boost::json::serialize(encode_prepared_groups({g}));
  EXPECT_NE(json.find(R"("CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=uid-gpu-0"],"ShareID":"0b8e1f6e-0000-4000-8000-000000000001",)"
                      R"("Metadata":{"Attributes":{"iommuFDEnabled":{"bool":false},"resource.kubernetes.io/numaNode":{"int":0},)"
                      R"("type":{"string":"vfio"}},"NetworkData":null})"),
            std::string::npos)
      << json;
  auto back = decode_prepared_groups(encode_prepared_groups({g}), "c");
  ASSERT_TRUE(back);
  EXPECT_EQ((*back)[0].devices[0], e);
  EXPECT_EQ(metadata_attributes((*back)[0].devices[0].metadata), vfio.attributes);
  auto answer = to_prepared_devices(*back);
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(answer[0].share_id, e.share_id);
  // Without them, the device entry is exactly as before.
  e.share_id.clear();
  e.metadata.clear();
  g.devices[0] = e;
  const auto plain = boost::json::serialize(encode_prepared_groups({g}));
  EXPECT_EQ(plain.find("ShareID"), std::string::npos);
  EXPECT_EQ(plain.find("Metadata"), std::string::npos);
}

}  // namespace
}  // namespace nvdra::claims
