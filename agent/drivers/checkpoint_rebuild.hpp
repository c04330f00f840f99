#pragma once
// After a bad checkpoint was moved aside (driver_checkpoint.hpp), the GPU driver rebuilds the
// entries of the claims still prepared on the node: each claim CDI spec names a claim UID; the API
// (one list of ResourceClaims) gives its namespace, name and allocation; GpuClaimHandler::adopt
// records it as prepared without touching the GPUs. What cannot be rebuilt (no API server, a claim
// gone, a MIG device gone) is reported, and recover() then treats its spec as an orphan.
#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::k8s { class ApiServer; }
namespace nvdra::cdi { class SpecStore; }
namespace nvdra::runtime { class WorkerPool; }
namespace nvdra::claims { class GpuClaimHandler; }

namespace nvdra::drivers {

struct RebuildReport {
  std::vector<std::string> adopted;  // "ns/name (uid)"
  std::vector<Error> errors;         // per claim (or the listing); those claims were not rebuilt
};

// The claim UIDs of this vendor's claim spec files ("<vendor>-claim_<uid>.yaml|.json").
std::vector<std::string> claim_uids_of_specs(const std::vector<std::string>& files, std::string_view vendor);

boost::asio::awaitable<RebuildReport> rebuild_gpu_claims(runtime::WorkerPool& pool, k8s::ApiServer* api,
                                                         cdi::SpecStore& specs, claims::GpuClaimHandler& handler);

}  // namespace nvdra::drivers
