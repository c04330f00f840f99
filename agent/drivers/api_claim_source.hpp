#pragma once
// ApiClaimSource — claims::ClaimSource over the Kubernetes API: GET the ResourceClaim
// (k8s::lookup_claim checks the UID kubelet gave and keeps this driver's results and configs)
// and hand the pipeline its allocation. Without an API server every lookup is kUnavailable with
// a message that says how to configure one, so kubelet retries and the operator knows why.
#include <memory>
#include <string>

#include "agent/claims/claim/claim_source.hpp"

namespace nvdra::k8s { class ApiServer; }

namespace nvdra::drivers {

class ApiClaimSource final : public claims::ClaimSource {
 public:
  ApiClaimSource(std::shared_ptr<k8s::ApiServer> api, std::string driver);
  boost::asio::awaitable<Result<claims::ClaimAllocation>> get(kubelet::ClaimRef claim) override;

 private:
  std::shared_ptr<k8s::ApiServer> api_;
  std::string driver_;
};

}  // namespace nvdra::drivers
