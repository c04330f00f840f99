#pragma once
// The seed's HostManagedIMEX channel prepare rules (§7.2, §7.4) as pure checks, so their wording
// lives in one place and unit tests pin it. "Permanent" errors are the ones upstream marks
// permanentError (no internal retry): the claim or node must change before a retry can succeed.
// kubelet still retries the pod on its own schedule; the message says the retry will fail the
// same way until the named thing is fixed.
#include <cstddef>
#include <string>

#include "agent/base/result.hpp"

namespace nvdra::imex {

// Appended to every permanent error.
inline constexpr const char* kPermanent = " (permanent error: retrying cannot succeed until this is fixed)";

// Step 2: exactly one allocation result of this driver.
Status check_result_count(std::size_t results);

// Step 3: allocationMode must be "" or "Single"; anything else ("All", "foo") is refused, naming
// the value (Error::field = "allocationMode").
Status check_allocation_mode(const std::string& mode);

// Step 7: a node without an NVLink clique cannot use IMEX channels.
Status check_clique(const std::string& clique_id);

// §7.4: a ComputeDomainDaemonConfig or a daemon device reaching prepare. `what` says which.
Error daemon_claim_error(const std::string& what);

// Step 5: channel 0 is already held by a completed claim on this node (upstream's wording).
Error channel_conflict_error(const std::string& other_claim);

// With HostManagedIMEX off: what nvdra does not do, and how to proceed.
Error driver_managed_error();

}  // namespace nvdra::imex
