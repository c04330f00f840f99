#pragma once
// The pure half of ComputeDomainClaimHandler (HostManagedIMEX channel claims, seed §7.2–§7.4): the
// seed's checks of an allocation, in its order — daemon devices and configs refused (§7.4), allocationMode
// "" or Single, only channel-0, upstream's config resolution, exactly one result, a channel config.
#include <string>

#include "agent/base/result.hpp"
#include "agent/claims/claim/claim_source.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "k8s/claim_lookup.hpp"

namespace nvdra::drivers {

struct HostManagedPlan {
  std::string domain_id;
  k8s::AllocatedDevice result;       // the one result of this driver
  claims::ClaimAllocation recorded;  // what the checkpoint records as the claim's status
};

// Errors name the claim's field and the allowed values (not the claim: the caller adds it).
Result<HostManagedPlan> plan_host_managed(const k8s::ClaimAllocation& allocation, const kubelet::ClaimRef& claim,
                                          const claims::ConfigGates& gates);

}  // namespace nvdra::drivers
