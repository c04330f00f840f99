#pragma once
// A failed prepare whose rollback failed too (issue #30): what it left behind (a MIG device, a
// vfio-pci binding, an MPS daemon, a CDI spec, a checkpoint entry) is told, never dropped. The
// handler logs it here; the driver's callback records a Warning Event on the claim and counts it.
#include <functional>
#include <string>
#include <string_view>

#include "agent/base/error.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::claims {

// `left`: the operator-facing sentence report_failed_rollback logs.
using RollbackFailed = std::function<void(const kubelet::ClaimRef& claim, const std::string& left)>;

// Logs (warn, logger `driver`) that rolling back `claim`'s failed prepare failed with `undo`, which
// names what was left, and passes the same sentence to `told` (when set).
void report_failed_rollback(std::string_view driver, const kubelet::ClaimRef& claim, const Error& undo,
                            const RollbackFailed& told);

}  // namespace nvdra::claims
