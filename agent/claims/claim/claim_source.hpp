#pragma once
// ClaimSource — where the pipeline reads a claim's allocation (status.allocation.devices) for this
// driver. Real: the lead's adapter over the Kubernetes API client; test: a fake serving claims the
// test defines. The answer is already in the form config resolution takes (ResolveInput), so the
// pipeline stays independent of the k8s client.
//
// Contract: called on the io_context thread; may suspend (API round trip). Errors: kNotFound when
// the claim does not exist, kUnavailable for transient API failures; messages name the claim.
// The returned `uid` is the UID the API has: the pipeline compares it with kubelet's.
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/config/config_resolver.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::claims {

struct ClaimAllocation {
  std::string uid;                          // metadata.uid as the API has it
  std::vector<AllocationResult> results;    // every result (other drivers' too); `type` is filled later
  std::vector<ConfigEntry> configs;         // status.allocation.devices.config, in API order
  // Annotation resource.kubernetes.io/pod-claim-name (claims made from a ResourceClaimTemplate):
  // where the device-metadata files appear in the containers.
  std::optional<std::string> pod_claim_name;
};

class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  virtual boost::asio::awaitable<Result<ClaimAllocation>> get(kubelet::ClaimRef claim) = 0;
};

}  // namespace nvdra::claims
