#pragma once
// The pure half of DriverManagedClaimHandler: which kind of claim an allocation is (daemon or channel),
// its ComputeDomain and allocation mode, after upstream's config resolution.
#include <string>

#include "agent/base/result.hpp"
#include "agent/claims/claim/claim_source.hpp"
#include "agent/drivers/domain_groups.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "k8s/claim_lookup.hpp"

namespace nvdra::drivers {

struct DomainClaimPlan {
  DomainDeviceKind kind = DomainDeviceKind::kChannel;
  std::string domain_id;
  std::string allocation_mode;     // channel claims: "" | Single | All
  k8s::AllocatedDevice result;     // the one result of this driver
  claims::ClaimAllocation recorded;  // what the checkpoint records as the claim's status
};

Error with_claim(Error e, const kubelet::ClaimRef& claim);

// Errors name the claim's field and the allowed values.
Result<DomainClaimPlan> decide(const k8s::ClaimAllocation& allocation, const kubelet::ClaimRef& claim,
                               const claims::ConfigGates& gates);

}  // namespace nvdra::drivers
