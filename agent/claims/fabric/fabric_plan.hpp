#pragma once
// Which FabricManager partitions a gpu.nvidia.com claim needs — one rule set for upstream's
// FabricManagerPartitioning and the seed's fabricTopologyConfig (FabricTopologySupport):
//  * no fabricTopologyConfig, FabricManagerPartitioning on: upstream's rule — the claim's full GPUs
//    must be exactly one partition's module set (that partition is activated), else upstream's error;
//  * strategy Auto: the partition of partitionSize (default: the claim's GPU count) whose module set
//    is exactly the claim's GPUs; Manual: the listed partitionIDs ("3" or "partition-3"), which must
//    exist, not overlap, cover the claim's GPUs and, with partitionSize, each be of that size
//    (partitionIDs under Auto are refused by validation); Disabled: nothing;
//  * virtualizationModel BareMetal / SharedNVSwitch: the agent activates; FullPassthrough: the same
//    checks, no activation (the guest's FM does it); VGPU: nothing (topology off, as the seed says);
//  * minBandwidth (GB/s): every chosen partition's per-GPU NVLink bandwidth as FM reports it (links
//    available x line rate x 2) must reach it; maxLatency: the seed gives it no definition (0.1 ms
//    of what, measured how?) and FM reports no latency, so a claim asking for one fails, naming
//    minBandwidth / partitionSize instead, rather than being promised what nobody measures.
// Pure; errors carry the field ("fabricTopologyConfig.partitionIDs[1]") and the allowed values.
#include <optional>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/config/opaque_config.hpp"
#include "fm/fabric_manager.hpp"

namespace nvdra::claims {

struct FabricGates {
  bool fm_partitioning = false;    // upstream FabricManagerPartitioning
  bool topology_support = false;   // seed FabricTopologySupport
  bool any() const { return fm_partitioning || topology_support; }
};

struct FabricRequest {
  std::vector<unsigned> modules;  // module ids of the claim's full GPUs, sorted
  std::vector<std::string> gpus_without_module;  // full GPUs NVML gave no module id
  std::optional<FabricTopologyConfig> config;
};

struct FabricPlan {
  std::vector<unsigned> partitions;  // sorted; empty: FM is not touched for this claim
  bool activate = false;             // false: checked only (FullPassthrough)
  std::string rule;                  // "FabricManagerPartitioning", "Auto", "Manual", … for logs
};

// `fabric`: FM's partition table, or nullopt with `unavailable` saying why there is none here.
// `fm_expected`: the node has NVSwitches, so no table means FM is not connected (yet) — then a claim
// that would need a partition fails naming FM's state instead of being prepared without one.
Result<FabricPlan> plan_fabric(const FabricRequest& request, const std::optional<std::vector<fm::Partition>>& fabric,
                               const std::string& unavailable, FabricGates gates, bool fm_expected = false);

// "[1 2 3 4]", as upstream's Go error prints a module set.
std::string module_set(const std::vector<unsigned>& modules);

}  // namespace nvdra::claims
