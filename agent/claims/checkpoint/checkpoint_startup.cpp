#include "agent/claims/checkpoint/checkpoint_startup.hpp"

#include <fstream>
#include <sstream>

namespace nvdra::claims {

StartupCheckpoint reconcile_boot_id(std::optional<Checkpoint> loaded, const std::string& boot_id) {
  StartupCheckpoint out;
  if (!loaded) {
    out.checkpoint.node_boot_id = boot_id;
    out.check = BootCheck::kCreated;
    out.needs_save = true;
  } else if (loaded->node_boot_id.empty()) {
    out.checkpoint = std::move(*loaded);
    out.checkpoint.node_boot_id = boot_id;
    out.check = BootCheck::kAdoptedBootId;
    out.needs_save = true;
  } else if (loaded->node_boot_id == boot_id) {
    out.checkpoint = std::move(*loaded);
    out.check = BootCheck::kSameBoot;
  } else {
    out.checkpoint.node_boot_id = boot_id;
    out.check = BootCheck::kNewBoot;
    out.needs_save = true;
  }
  return out;
}

Result<std::string> read_boot_id(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) return Error{ErrorCode::kFailedPrecondition, "cannot read the boot id from " + path, {}, path};
  std::string id = ss.str();
  const auto first = id.find_first_not_of(" \t\r\n");
  const auto last = id.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) return Error{ErrorCode::kFailedPrecondition, "empty boot id in " + path, {}, path};
  return id.substr(first, last - first + 1);
}

std::vector<std::string> unfinished_claims(const Checkpoint& checkpoint) {
  std::vector<std::string> out;
  for (const auto& [uid, claim] : checkpoint.claims)
    if (claim.state == ClaimState::kPrepareStarted) out.push_back(uid);
  return out;
}

}  // namespace nvdra::claims
