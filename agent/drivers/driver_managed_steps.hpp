#pragma once
// The pure half of the compute-domain driver's claims: upstream's config resolution of an allocation (both
// IMEX modes), and for driver-managed mode which kind of claim it is (daemon or channel), its
// ComputeDomain and allocation mode.
#include <string>

#include "agent/base/result.hpp"
#include "agent/claims/claim/claim_source.hpp"
#include "agent/claims/config/config_resolver.hpp"
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

// The allocation's results (daemon-0 a daemon, anything else a channel) and configs, resolved by upstream's
// rules, and the same allocation as the checkpoint records it.
struct ResolvedDomainClaim {
  claims::Resolution resolution;
  claims::ClaimAllocation recorded;
};
Result<ResolvedDomainClaim> resolve_domain_claim(const k8s::ClaimAllocation& allocation,
                                                 const kubelet::ClaimRef& claim, const claims::ConfigGates& gates);

// Errors name the claim's field and the allowed values.
Result<DomainClaimPlan> decide(const k8s::ClaimAllocation& allocation, const kubelet::ClaimRef& claim,
                               const claims::ConfigGates& gates);

}  // namespace nvdra::drivers
