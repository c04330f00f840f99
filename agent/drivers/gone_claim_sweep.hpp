#pragma once
// sweep_gone_claims — the prepared claims the API no longer has (deleted while the agent was down)
// are unprepared in the background once the driver serves, not one claim read each before kubelet
// is served: at 1,000 prepared claims those reads kept the GPU driver from registering for ~0.3 s
// with unlimited claim reads, and for ~18 s at the default --claim-read-qps (issue #33). Upstream's
// plugin runs its stale-claim cleanup in the background too (reference §6.4, PrepareStarted claims
// only; kubelet unprepares the rest as their pods go).
//
// One claim read at a time, through the prepare path's client and its QPS limit, so the sweep never
// has more than one read queued ahead of kubelet's. A gone claim is unprepared through `unprepare`:
// kubelet's own path (the claim's lock, status rows, metrics, Events), so a kubelet call for the same
// claim never interleaves with it. A claim no longer prepared when its turn comes (kubelet
// unprepared it) is skipped; a read that fails keeps the claim, as does one the API still has.
// Until its turn, a gone claim's devices stay held: a new claim on them is refused, and kubelet's
// retry succeeds once the sweep has unprepared it.
// io_context thread only; cancellable between claims and inside each read or unprepare.
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::drivers {

struct GoneClaimSweep {
  // Whether the claim is still prepared (its checkpoint entry PrepareCompleted) when its turn comes.
  std::function<bool(const kubelet::ClaimRef&)> still_prepared;
  claims::ClaimExists exists;
  // Unprepares as kubelet would; "" or the error kubelet would have been told.
  std::function<boost::asio::awaitable<std::string>(kubelet::ClaimRef)> unprepare;
};

struct GoneClaimReport {
  std::size_t asked = 0;                // claims read from the API
  std::vector<std::string> unprepared;  // UIDs
  std::vector<std::string> errors;      // a failed read or unprepare, naming the claim
};

// The claims a sweep asks about: PrepareCompleted entries with a recorded name (an older plugin's
// entry without one cannot be asked about), in UID order.
std::vector<kubelet::ClaimRef> gone_claim_candidates(const claims::Checkpoint& checkpoint);

boost::asio::awaitable<GoneClaimReport> sweep_gone_claims(std::vector<kubelet::ClaimRef> candidates,
                                                          const GoneClaimSweep& with);

}  // namespace nvdra::drivers
