#include "agent/drivers/api_claim_source.hpp"

#include "k8s/claim_lookup.hpp"

namespace nvdra::drivers {

ApiClaimSource::ApiClaimSource(std::shared_ptr<k8s::ApiServer> api, std::string driver)
    : api_(std::move(api)), driver_(std::move(driver)) {}

boost::asio::awaitable<Result<claims::ClaimAllocation>> ApiClaimSource::get(kubelet::ClaimRef claim) {
  if (!api_) {
    Error e = make_error(ErrorCode::kUnavailable,
                         "no Kubernetes API server configured (--kubeconfig, or run in a pod): cannot read "
                         "resourceclaim " + claim.namespace_name + "/" + claim.name);
    e.claim = claim.describe();
    co_return e;
  }
  auto found = co_await k8s::lookup_claim(*api_, k8s::ClaimRef{claim.namespace_name, claim.name, claim.uid}, driver_);
  if (!found) co_return found.error();
  claims::ClaimAllocation out;
  out.uid = found->claim.uid;  // lookup_claim has checked it equals kubelet's
  out.pod_claim_name = found->pod_claim_name;
  for (const auto& d : found->devices) {
    claims::AllocationResult result{d.request, driver_, d.pool, d.device};
    result.admin_access = d.admin_access;
    result.share_id = d.share_id;
    out.results.push_back(std::move(result));
  }
  for (const auto& c : found->configs) {
    claims::ConfigEntry entry;
    entry.source = c.source == k8s::ConfigSource::kClass ? "FromClass" : "FromClaim";
    entry.requests = c.requests;
    entry.opaque = claims::OpaqueParameters{driver_, c.parameters};
    out.configs.push_back(std::move(entry));
  }
  co_return out;
}

}  // namespace nvdra::drivers
