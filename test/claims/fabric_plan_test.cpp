// plan_fabric: upstream's FabricManagerPartitioning rule and the seed's fabricTopologyConfig on the
// 8-GPU HGX table as FM lists it (0: [1..8], 1: [1 2 3 4], 2: [5 6 7 8], 3: [1 3], 4: [2 4], 5: [5 7],
// 6: [6 8], 7-14: [1]..[8]).
#include <gtest/gtest.h>

#include "agent/claims/fabric/fabric_plan.hpp"

namespace nvdra::claims {
namespace {

const std::optional<std::vector<fm::Partition>> kTable = fm::hgx8_partitions();
constexpr FabricGates kUpstream{true, false};
constexpr FabricGates kSeed{false, true};

FabricRequest req(std::vector<unsigned> modules, std::optional<FabricTopologyConfig> cfg = std::nullopt) {
  return FabricRequest{std::move(modules), {}, std::move(cfg)};
}

FabricTopologyConfig cfg(std::string strategy, std::optional<int64_t> size = std::nullopt,
                         std::vector<std::string> ids = {}, std::string model = "BareMetal") {
  FabricTopologyConfig c;
  c.strategy = std::move(strategy);
  c.partition_size = size;
  c.partition_ids = std::move(ids);
  c.virtualization_model = std::move(model);
  return c;
}

TEST(FabricPlan, UpstreamRuleActivatesThePartitionWhoseModuleSetEqualsTheClaimsGpus) {
  auto p = plan_fabric(req({1, 2, 3, 4}), kTable, "", kUpstream);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->partitions, std::vector<unsigned>{1});
  EXPECT_TRUE(p->activate);
  auto one = plan_fabric(req({7}), kTable, "", kUpstream);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->partitions, std::vector<unsigned>{13});
}

TEST(FabricPlan, UpstreamRuleRefusesAModuleSetNoPartitionHoldsWithUpstreamsMessage) {
  auto p = plan_fabric(req({1, 5}), kTable, "", kUpstream);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "fabric manager: GPU module set [1 5] does not match any FM partition; refusing partition activation");
}

TEST(FabricPlan, NothingIsPlannedWithTheGatesOffWithoutFmOrForMigOnlyClaims) {
  auto off = plan_fabric(req({1, 2, 3, 4}), kTable, "", FabricGates{});
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->partitions.empty());
  auto no_fm = plan_fabric(req({1, 5}), std::nullopt, "no NVSwitch", kUpstream);
  ASSERT_TRUE(no_fm.ok());
  EXPECT_TRUE(no_fm->partitions.empty());
  auto seed_without_block = plan_fabric(req({1, 5}), kTable, "", kSeed);
  ASSERT_TRUE(seed_without_block.ok());
  EXPECT_TRUE(seed_without_block->partitions.empty());
  auto mig_only = plan_fabric(req({}), kTable, "", kUpstream);
  ASSERT_TRUE(mig_only.ok());
  EXPECT_TRUE(mig_only->partitions.empty());
}

TEST(FabricPlan, AutoPicksThePartitionOfPartitionSizeHoldingExactlyTheClaimsGpus) {
  auto p = plan_fabric(req({5, 7}, cfg("Auto", 2)), kTable, "", kSeed);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->partitions, std::vector<unsigned>{5});
  EXPECT_EQ(p->rule, "Auto");
  auto wrong_size = plan_fabric(req({5, 7}, cfg("Auto", 4)), kTable, "", kSeed);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_EQ(wrong_size.error().field, "fabricTopologyConfig.partitionSize");
  auto no_match = plan_fabric(req({1, 2}, cfg("Auto", 2)), kTable, "", kSeed);
  ASSERT_FALSE(no_match.ok());
  EXPECT_EQ(no_match.error().field, "fabricTopologyConfig.strategy");
  EXPECT_NE(no_match.error().message.find("3 [1 3], 4 [2 4], 5 [5 7], 6 [6 8]"), std::string::npos)
      << no_match.error().message;
}

TEST(FabricPlan, ManualActivatesTheListedIdsAndFailsNamingAWrongOrNonCoveringId) {
  auto p = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"partition-1"})), kTable, "", kSeed);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->partitions, std::vector<unsigned>{1});
  auto zero = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"0"})), kTable, "", kSeed);
  ASSERT_TRUE(zero.ok()) << zero.error().describe();
  EXPECT_EQ(zero->partitions, std::vector<unsigned>{0});  // FM's id 0: all eight GPUs
  auto unknown = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"3", "partition-42"})), kTable, "", kSeed);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().field, "fabricTopologyConfig.partitionIDs[1]");
  EXPECT_NE(unknown.error().message.find("\"partition-42\""), std::string::npos);
  auto short_of = plan_fabric(req({1, 2, 3}, cfg("Manual", std::nullopt, {"3"})), kTable, "", kSeed);
  ASSERT_FALSE(short_of.ok());
  EXPECT_EQ(short_of.error().field, "fabricTopologyConfig.partitionIDs");
  EXPECT_NE(short_of.error().message.find("modules [2]"), std::string::npos) << short_of.error().message;
  // partitionSize under Manual: each listed partition must be of that size.
  auto sized = plan_fabric(req({1, 2}, cfg("Manual", 2, {"1"})), kTable, "", kSeed);
  ASSERT_FALSE(sized.ok());
  EXPECT_EQ(sized.error().field, "fabricTopologyConfig.partitionSize");
  EXPECT_NE(sized.error().message.find("partition 1 [1 2 3 4] has 4 GPUs, not partitionSize 2"), std::string::npos)
      << sized.error().message;
  EXPECT_TRUE(plan_fabric(req({1, 2}, cfg("Manual", 4, {"1"})), kTable, "", kSeed).ok());
  auto overlapping = plan_fabric(req({1, 2}, cfg("Manual", std::nullopt, {"1", "3"})), kTable, "", kSeed);
  ASSERT_FALSE(overlapping.ok());
  EXPECT_EQ(overlapping.error().field, "fabricTopologyConfig.partitionIDs[1]");
}

TEST(FabricPlan, VirtualizationModelsAndDisabled) {
  auto disabled = plan_fabric(req({1, 5}, cfg("Disabled")), kTable, "", kSeed);
  ASSERT_TRUE(disabled.ok());
  EXPECT_TRUE(disabled->partitions.empty());
  auto vgpu = plan_fabric(req({1, 5}, cfg("Auto", std::nullopt, {}, "VGPU")), kTable, "", kSeed);
  ASSERT_TRUE(vgpu.ok());
  EXPECT_TRUE(vgpu->partitions.empty());
  auto guest = plan_fabric(req({1, 2, 3, 4}, cfg("Auto", 4, {}, "FullPassthrough")), kTable, "", kSeed);
  ASSERT_TRUE(guest.ok());
  EXPECT_EQ(guest->partitions, std::vector<unsigned>{1});
  EXPECT_FALSE(guest->activate);
  auto shared = plan_fabric(req({1, 2, 3, 4}, cfg("Auto", 4, {}, "SharedNVSwitch")), kTable, "", kSeed);
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(shared->activate);
}

TEST(FabricPlan, MinBandwidthIsCheckedAgainstFmsNvlinkFiguresAndMaxLatencyIsRefused) {
  auto c = cfg("Auto", 2);
  c.min_bandwidth = 900;  // 18 links x 25000 MB/s x 2
  auto ok = plan_fabric(req({1, 3}, c), kTable, "", kSeed);
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  c.min_bandwidth = 901;
  auto low = plan_fabric(req({1, 3}, c), kTable, "", kSeed);
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.error().field, "fabricTopologyConfig.minBandwidth");
  EXPECT_NE(low.error().message.find("gives 900 GB/s"), std::string::npos) << low.error().message;
  auto single = cfg("Auto");
  single.min_bandwidth = 1;
  EXPECT_FALSE(plan_fabric(req({3}, single), kTable, "", kSeed).ok());  // a lone GPU has no NVLink peer
  auto latency = cfg("Auto");
  latency.max_latency = 0.1;
  auto refused = plan_fabric(req({1, 2}, latency), kTable, "", kSeed);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().field, "fabricTopologyConfig.maxLatency");
}

TEST(FabricPlan, WithNvswitchesButFmNotConnectedAClaimNeedingAPartitionFailsNamingFmsState) {
  auto upstream = plan_fabric(req({1, 2, 3, 4}), std::nullopt, "fabric manager: fmConnect(unix:/s): "
                              "FM_ST_CONNECTION_NOT_VALID (-9)", kUpstream, true);
  ASSERT_FALSE(upstream.ok());
  EXPECT_EQ(upstream.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(upstream.error().message.find("fabric manager is not connected (fabric manager: fmConnect(unix:/s): "
                                          "FM_ST_CONNECTION_NOT_VALID (-9))"),
            std::string::npos)
      << upstream.error().message;
  auto seed = plan_fabric(req({1, 2}, cfg("Auto")), std::nullopt, "x", kSeed, true);
  ASSERT_FALSE(seed.ok());
  EXPECT_EQ(seed.error().field, "fabricTopologyConfig");
  // Nothing to activate: the gates off, a MIG-only claim, or no NVSwitch at all.
  EXPECT_TRUE(plan_fabric(req({1, 2}), std::nullopt, "x", FabricGates{}, true).ok());
  EXPECT_TRUE(plan_fabric(req({}), std::nullopt, "x", kUpstream, true).ok());
  EXPECT_TRUE(plan_fabric(req({1, 2}), std::nullopt, "no NVSwitch", kUpstream, false).ok());
}

TEST(FabricPlan, ABlockWithoutFmOrForMigOnlyFailsNamingWhy) {
  auto no_fm = plan_fabric(req({1, 2}, cfg("Auto")), std::nullopt, "no NVSwitch (x is empty)", kSeed);
  ASSERT_FALSE(no_fm.ok());
  EXPECT_NE(no_fm.error().message.find("no NVSwitch (x is empty)"), std::string::npos);
  EXPECT_FALSE(plan_fabric(req({}, cfg("Auto")), kTable, "", kSeed).ok());
}

}  // namespace
}  // namespace nvdra::claims
