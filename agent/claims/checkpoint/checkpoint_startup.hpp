#pragma once
// What the agent does with the loaded checkpoint at start-up (reference §6.4): claims survive a
// restart of the agent but not a reboot of the node, detected by the kernel's boot id.
#include <optional>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::claims {

enum class BootCheck {
  kCreated,        // no checkpoint: a fresh empty one
  kSameBoot,       // boot ids equal: keep everything
  kAdoptedBootId,  // the checkpoint had no boot id: keep the claims, record the current id
  kNewBoot,        // another boot: upstream forgets every claim (their CDI files stay)
};

struct StartupCheckpoint {
  Checkpoint checkpoint;
  BootCheck check = BootCheck::kCreated;
  bool needs_save = false;  // save before serving, so the boot id is on disk
};

StartupCheckpoint reconcile_boot_id(std::optional<Checkpoint> loaded, const std::string& boot_id);

// The trimmed content of /proc/sys/kernel/random/boot_id (path overridable for tests).
Result<std::string> read_boot_id(const std::string& path = "/proc/sys/kernel/random/boot_id");

// Claims that started preparing but never completed: the pipeline rolls these back at start-up
// (and, with a name, checks them against the API server like upstream's periodic cleanup).
std::vector<std::string> unfinished_claims(const Checkpoint& checkpoint);

}  // namespace nvdra::claims
