#pragma once
// Claim lookup at prepare: GET the ResourceClaim, check the UID kubelet gave, and extract this
// driver's allocation results and the opaque configs that apply to each (upstream-driver.md §3.3).
// Plain structs out; every failure is a per-claim nvdra::Error naming the claim and the field.
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "k8s/api_server.hpp"

namespace nvdra::k8s {

struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;  // as kubelet sent it
  std::string describe() const { return ns + "/" + name + " (" + uid + ")"; }
};

enum class ConfigSource { kClass, kClaim };

struct OpaqueConfig {
  ConfigSource source = ConfigSource::kClaim;
  std::vector<std::string> requests;  // empty: every request
  std::string parameters;             // raw JSON object, for the driver's own decoder
  std::size_t index = 0;              // position in status.allocation.devices.config (for messages)
};

// How a config's `requests` names a result's request.
enum class RequestMatch {
  kAllRequests,    // the config lists no requests
  kExact,          // lists result.request verbatim ("gpu" or "gpu/small")
  kParentRequest,  // lists "gpu" for result "gpu/small" (Kubernetes API semantics; upstream's Go
                   // driver compares verbatim and ignores this form, see upstream-driver.md §3.3)
};

struct ConfigMatch {
  std::size_t config = 0;  // index into ClaimAllocation::configs
  RequestMatch match = RequestMatch::kAllRequests;
};

struct AllocatedDevice {
  std::string request;       // as allocated: "gpu" or "gpu/small" (prioritized list)
  std::string base_request;  // "gpu": what goes back to kubelet
  std::string pool;
  std::string device;
  std::string share_id;      // empty unless the allocation has one
  bool admin_access = false;
  // Configs that apply, lowest precedence first: class before claim, then list order; the last
  // one wins where settings overlap.
  std::vector<ConfigMatch> configs;
};

// The annotation the resource claim controller puts on a claim it made from a ResourceClaimTemplate:
// the pod's name for the claim (pod.spec.resourceClaims[].name).
inline constexpr std::string_view kPodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name";

struct ClaimAllocation {
  ClaimRef claim;
  std::vector<AllocatedDevice> devices;  // this driver's results only
  std::vector<OpaqueConfig> configs;     // this driver's opaque configs: class ones first
  std::optional<std::string> pod_claim_name;  // kPodClaimNameAnnotation, where the claim has it
};

// Parses a ResourceClaim (resource.k8s.io/v1 JSON) for `driver`.
Result<ClaimAllocation> parse_claim_allocation(std::string_view claim_json, const ClaimRef& ref,
                                               const std::string& driver);

// GET + parse. A missing claim is kNotFound; API failures are kUnavailable; both name the claim.
boost::asio::awaitable<Result<ClaimAllocation>> lookup_claim(ApiServer& api, ClaimRef ref, std::string driver);

}  // namespace nvdra::k8s
