#pragma once
// GpuClaimHandler::PlannedGroup — one config group of a claim as planned for prepare; shared by the
// handler's translation units (gpu_claim_handler.cpp, gpu_claim_fabric.cpp). Internal.
#include <optional>
#include <string>
#include <vector>

#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/claims/sharing_plan.hpp"

namespace nvdra::claims {

struct GpuClaimHandler::PlannedGroup {
  std::vector<const InventoryDevice*> devices;
  std::vector<std::size_t> results;  // into ClaimAllocation::results, parallel to devices
  SharingPlan plan;
  std::vector<std::string> uuids;      // all, sorted
  std::vector<std::string> gpu_uuids;  // full GPUs, sorted
  std::optional<FabricTopologyConfig> fabric;  // the group's GpuConfig.fabricTopologyConfig
};

}  // namespace nvdra::claims
