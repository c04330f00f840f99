#pragma once
// Start-up's walks of the gpu.nvidia.com step list (claim_step.hpp `recover`): GpuClaimHandler::recover,
// adopt_fabric and adopt build a GpuPrepare per claim with `recovery` set and call every step's
// recover in apply order; each step does its part of the pass it is in and nothing in the others.
// A new step with start-up work implements recover for its pass; the handler's code stays as it is.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::claims {

struct RecoveryReport {
  std::vector<std::string> rolled_back;    // PrepareStarted claims undone (UIDs)
  std::vector<std::string> orphan_specs;   // CDI claim spec files no checkpoint entry owned
  std::vector<std::string> orphan_migs;    // DynamicMIG: MIG devices no prepared claim owned, destroyed
  std::vector<std::string> recreated_migs; // DynamicMIG: "<claim uid>/<device>" found missing and recreated
  std::vector<std::string> rewritten_specs; // CDI specs of prepared claims found missing or malformed, rewritten
  std::vector<Error> errors;               // per claim/file; the rest carried on
  // Checkpoint entries whose devices cannot be read (entry_readable): kept as they are, and while
  // any is there no MIG device, MPS daemon or GPU binding is undone on a guess (issue #30).
  struct Unreadable {
    kubelet::ClaimRef claim;
    std::string why;
  };
  std::vector<Unreadable> unreadable;
  std::vector<std::string> kept_migs;  // DynamicMIG: MIG devices no readable entry owns, left in place
};

enum class RecoveryPass {
  // Before any claim is undone, every checkpointed claim whose recorded status plans (groups and
  // allocation set): what no other claim may take is held for it again (FM partitions).
  kHold,
  // After the rollbacks, every PrepareCompleted claim (groups not set: the entry is
  // node.committer's): the node brought back in line with its entry (its DynamicMIG devices
  // recreated when gone, then its CDI spec written again when damaged).
  kRepair,
  // Take-over of a claim whose entry was lost (a corrupt checkpoint moved aside), planned from the
  // API: each step records in `prepared` what its prepare made, read from the node; nothing changes.
  kAdopt,
};

// DynamicMIG devices of completed claims found gone at start-up: device names by claim UID.
using MissingMigs = std::map<std::string, std::vector<std::string>>;

struct GpuRecovery {
  RecoveryPass pass = RecoveryPass::kHold;
  RecoveryReport* report = nullptr;  // kHold, kRepair: where a step's results go
  const MissingMigs* missing_migs = nullptr;  // kRepair, when DynamicMIG was reconciled
  // kRepair: the claims whose CDI spec start-up read whole in one pass before the walk (a pool job for
  // each claim's own read cost a start with 1,000 claims ~14 % of its CPU, issue #33).
  const std::set<std::string>* intact_specs = nullptr;
};

}  // namespace nvdra::claims
