// The checkpoint's byte format and checksums against upstream's (reference §6.1–6.2).
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::claims {
namespace {

namespace json = boost::json;

constexpr const char* kBootId = "8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b";

TEST(CheckpointFormat, EmptyCheckpointMatchesUpstreamTestVectorByteForByte) {
  Checkpoint cp;
  cp.node_boot_id = kBootId;
  EXPECT_EQ(encode_checkpoint(cp),
            R"({"checksum":1083090442,"v1":{},"v2":{"checksum":3335124002,"nodeBootID":"8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b"}})");
}

TEST(CheckpointFormat, GoSpewChecksumOfKnownInputs) {
  // FNV-1a 32 of the literal "([]uint8)[]" and "([]uint8)[49 50]" (bytes "12").
  auto fnv = [](std::string_view s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s) h = (h ^ c) * 16777619u;
    return h;
  };
  EXPECT_EQ(go_checksum(""), fnv("([]uint8)[]"));
  EXPECT_EQ(go_checksum("12"), fnv("([]uint8)[49 50]"));
  EXPECT_EQ(go_checksum(std::string("\xff\x00", 2)), fnv("([]uint8)[255 0]"));
}

TEST(CheckpointFormat, GoJsonEscapesHtmlCharactersAndLineSeparators) {
  json::object o;
  o["k"] = "a<b>&c\xE2\x80\xA8";
  EXPECT_EQ(go_json(o), R"({"k":"a\u003cb\u003e\u0026c\u2028"})");
}

CheckpointedClaim completed_claim() {
  CheckpointedClaim c;
  c.state = ClaimState::kPrepareCompleted;
  c.status = json::parse(
      R"({"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-0"}],
          "config":[{"source":"FromClaim","requests":["gpu"],"opaque":{"driver":"gpu.nvidia.com","parameters":{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}}}]}}})");
  c.prepared_devices = json::parse(
      R"([{"devices":[{"gpu":{"info":{"uuid":"GPU-1"},"device":{"Requests":["gpu"],"PoolName":"node-a","DeviceName":"gpu-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=u1-gpu-0"]}},"mig":null}],"configState":{}}])")
                           .as_array();
  return c;
}

TEST(CheckpointFormat, RoundTripKeepsEveryClaimField) {
  Checkpoint cp;
  cp.node_boot_id = kBootId;
  cp.claims["u1"] = completed_claim();
  CheckpointedClaim started;
  started.name = "claim-b";
  started.ns = "team";
  cp.claims["u2"] = started;
  CheckpointedClaim aborted;
  aborted.state = ClaimState::kPrepareAborted;
  aborted.aborted_at = "2025-01-02T03:04:05Z";
  cp.claims["u3"] = aborted;
  auto back = decode_checkpoint(encode_checkpoint(cp), "test");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, cp);
}

TEST(CheckpointFormat, V1MirrorsOnlyCompletedClaims) {
  Checkpoint cp;
  cp.claims["u1"] = completed_claim();
  cp.claims["u2"] = CheckpointedClaim{};
  auto file = json::parse(encode_checkpoint(cp)).as_object();
  const auto& v1 = file.at("v1").at("preparedClaims").as_object();
  EXPECT_EQ(v1.size(), 1u);
  EXPECT_TRUE(v1.contains("u1"));
  EXPECT_FALSE(v1.at("u1").as_object().contains("checkpointState"));
  EXPECT_EQ(file.at("v2").at("preparedClaims").as_object().size(), 2u);
}

// An upstream-shaped file (§6.1): Go field order, a PrepareCompleted GPU+MIG claim (with the
// [quirk] of no name/namespace) and a PrepareStarted claim. Its checksums are computed here with
// the algorithm pinned by the upstream test vector above.
std::string upstream_sample() {
  const char* v1 =
      R"({"preparedClaims":{"0b5e6a52-1111-4c1b-9a1e-000000000001":{"status":{"allocation":{"devices":{"results":[{"request":"gpus","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-0"},{"request":"mig","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-1-mig-1g10gb-19-0"}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}},"reservedFor":[{"resource":"pods","name":"pod-a","uid":"p-1"}]},"preparedDevices":[{"devices":[{"gpu":{"info":{"uuid":"GPU-aaaa"},"device":{"Requests":["gpus"],"PoolName":"node-a","DeviceName":"gpu-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=0b5e6a52-1111-4c1b-9a1e-000000000001-gpu-0"]}},"mig":null}],"configState":{"timeSliceApplied":true}},{"devices":[{"gpu":null,"mig":{"concrete":{"parentMinor":1,"giId":1,"ciId":0,"migUUID":"MIG-bbbb","parentUUID":"GPU-cccc"},"device":{"Requests":["mig"],"PoolName":"node-a","DeviceName":"gpu-1-mig-1g10gb-19-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=0b5e6a52-1111-4c1b-9a1e-000000000001-gpu-1-mig-1g10gb-19-0"]}}}],"configState":{}}]}}})";
  const char* v2 =
      R"({"checksum":0,"preparedClaims":{"0b5e6a52-1111-4c1b-9a1e-000000000001":{"checkpointState":"PrepareCompleted","status":{"allocation":{"devices":{"results":[{"request":"gpus","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-0"},{"request":"mig","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-1-mig-1g10gb-19-0"}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}},"reservedFor":[{"resource":"pods","name":"pod-a","uid":"p-1"}]},"preparedDevices":[{"devices":[{"gpu":{"info":{"uuid":"GPU-aaaa"},"device":{"Requests":["gpus"],"PoolName":"node-a","DeviceName":"gpu-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=0b5e6a52-1111-4c1b-9a1e-000000000001-gpu-0"]}},"mig":null}],"configState":{"timeSliceApplied":true}},{"devices":[{"gpu":null,"mig":{"concrete":{"parentMinor":1,"giId":1,"ciId":0,"migUUID":"MIG-bbbb","parentUUID":"GPU-cccc"},"device":{"Requests":["mig"],"PoolName":"node-a","DeviceName":"gpu-1-mig-1g10gb-19-0","CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=0b5e6a52-1111-4c1b-9a1e-000000000001-gpu-1-mig-1g10gb-19-0"]}}}],"configState":{}}]},"0b5e6a52-2222-4c1b-9a1e-000000000002":{"checkpointState":"PrepareStarted","status":{"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-2"}]}}},"name":"claim-2","namespace":"team"}},"nodeBootID":"8f5a3d1e-2c4b-4e6f-9a1b-3c5d7e9f1a2b"})";
  json::object v2o = json::parse(v2).as_object();
  v2o["checksum"] = go_checksum(v2);
  json::object top;
  top["checksum"] = 0;
  top["v1"] = json::parse(v1);
  top["checksum"] = go_checksum(go_json(top));
  top["v2"] = std::move(v2o);
  return go_json(top);
}

TEST(CheckpointFormat, UpstreamShapedFileLoadsAndIsRewrittenByteForByte) {
  const std::string sample = upstream_sample();
  auto cp = decode_checkpoint(sample, "upstream");
  ASSERT_TRUE(cp.ok()) << cp.error().message;
  EXPECT_EQ(cp->node_boot_id, kBootId);
  ASSERT_EQ(cp->claims.size(), 2u);
  const auto& done = cp->claims.at("0b5e6a52-1111-4c1b-9a1e-000000000001");
  EXPECT_EQ(done.state, ClaimState::kPrepareCompleted);
  EXPECT_TRUE(done.name.empty()) << "upstream does not re-write name/namespace on completion";
  EXPECT_EQ(done.prepared_devices.size(), 2u);
  const auto& started = cp->claims.at("0b5e6a52-2222-4c1b-9a1e-000000000002");
  EXPECT_EQ(started.state, ClaimState::kPrepareStarted);
  EXPECT_EQ(started.ns, "team");
  EXPECT_EQ(encode_checkpoint(*cp), sample) << "our writer reproduces Go's bytes and checksums";
}

TEST(CheckpointFormat, V1OnlyFileLoadsAsCompletedClaims) {
  json::object top;
  top["checksum"] = 0;
  top["v1"] = json::parse(R"({"preparedClaims":{"u1":{"status":{},"preparedDevices":[{"devices":[],"configState":{}}]}}})");
  top["checksum"] = go_checksum(go_json(top));
  auto cp = decode_checkpoint(go_json(top), "old");
  ASSERT_TRUE(cp.ok()) << cp.error().message;
  EXPECT_EQ(cp->claims.at("u1").state, ClaimState::kPrepareCompleted);
  EXPECT_TRUE(cp->node_boot_id.empty());
}

struct CorruptCase {
  const char* name;
  std::string (*mutate)(std::string);
  const char* message;
};

class CorruptCheckpoint : public ::testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptCheckpoint, IsDetectedWithAClearError) {
  auto bytes = GetParam().mutate(upstream_sample());
  auto cp = decode_checkpoint(bytes, "/plugins/gpu.nvidia.com/checkpoint.json");
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(cp.error().message.find("checkpoint /plugins/gpu.nvidia.com/checkpoint.json is corrupt: "), std::string::npos);
  EXPECT_NE(cp.error().message.find(GetParam().message), std::string::npos) << cp.error().message;
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Mutations, CorruptCheckpoint,
    ::testing::Values(
        CorruptCase{"ClaimNameChanged", [](std::string s) { return replace_once(s, "claim-2", "claim-3"); },
                    "v2 checksum mismatch"},
        CorruptCase{"V1Changed", [](std::string s) { return replace_once(s, "pod-a", "pod-b"); }, "checksum mismatch"},
        CorruptCase{"Truncated", [](std::string s) { return s.substr(0, s.size() / 2); }, "not valid JSON"},
        CorruptCase{"Empty", [](std::string) { return std::string(); }, "not valid JSON"},
        CorruptCase{"NoChecksum", [](std::string) { return std::string(R"({"v1":{}})"); }, "the file has no checksum"},
        CorruptCase{"UnknownState",
                    [](std::string s) {
                      auto o = json::parse(s).as_object();
                      auto& v2 = o["v2"].as_object();
                      v2["preparedClaims"].as_object().begin()->value().as_object()["checkpointState"] = "Prepared";
                      v2["checksum"] = 0;
                      v2["checksum"] = go_checksum(go_json(v2));
                      return go_json(o);
                    },
                    "checkpointState \"Prepared\", expected PrepareStarted, PrepareCompleted or PrepareAborted"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CheckpointFormat, TopLevelKeyOfANewerVersionIsRefusedNamingIt) {
  // Upstream's readers drop unknown keys, and the top checksum covers v1 only, so such a file
  // verifies; nvdra does not guess what a newer writer keeps there (README: corrupted state).
  auto cp = decode_checkpoint(R"({"checksum":1083090442,"v1":{},"v3":{"preparedClaims":{}}})", "new");
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.error().field, "version");
  EXPECT_NE(cp.error().message.find("checkpoint new is of an unknown version: top-level key \"v3\""),
            std::string::npos)
      << cp.error().message;
  EXPECT_TRUE(decode_checkpoint(R"({"checksum":1083090442,"v1":{}})", "known").ok());
}

}  // namespace
}  // namespace nvdra::claims
