#pragma once
// ShareStep — the consumable-shares step of a gpu.nvidia.com prepare (upstream ConsumableShares,
// upstream-driver.md §4.3), run by GpuClaimHandler after the exclusivity check and before
// PrepareStarted, with no suspension in between:
//  * MPS is refused while consumable shares are on ("MPS sharing is not supported when consumable
//    shares is enabled", upstream's message): one MPS daemon per claim cannot serve several claims;
//  * a device another prepared claim already holds must be configured exactly as in that claim
//    (normalized opaque config): "requested device <dev> has conflicting configuration with
//    already prepared claim <uid>". Time-slice settings are per GPU, so differing ones would
//    silently override each other.
// Each share keeps its own checkpoint entry (its claim UID), CDI device ("<claimUID>-<device>")
// and ShareID; unprepare restores a GPU's time slice only when no other prepared claim still
// time-slices it (GpuClaimHandler::time_sliced_elsewhere). Pure; thread-safe.
#include <functional>
#include <optional>
#include <string>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/claims/claim/claim_source.hpp"
#include "agent/claims/config/config_resolver.hpp"

namespace nvdra::claims {

class ShareStep {
 public:
  // `type_of`: the inventory's type of a device of this node (nullopt: not ours).
  using TypeOf = std::function<std::optional<DeviceType>(const std::string& device)>;
  ShareStep(bool enabled, ConfigGates gates, TypeOf type_of);

  bool enabled() const { return enabled_; }
  // `mine`: the claim being prepared, its results typed by the inventory.
  Status check(const Checkpoint& checkpoint, const std::string& uid, const ClaimAllocation& mine) const;

  // A DynamicMIG device another completed claim already holds as a share: its live ids, to use
  // instead of creating the device again (it is destroyed only with its last share:
  // GpuClaimHandler::mig_used_elsewhere).
  struct LiveMig {
    std::string uuid;
    unsigned gi_id = 0, ci_id = 0;
  };
  std::optional<LiveMig> live_mig(const Checkpoint& checkpoint, const std::string& uid, const std::string& device) const;

 private:
  // The normalized config of each gpu.nvidia.com result of `allocation` (nullopt: unresolved).
  std::vector<std::optional<OpaqueConfig>> configs_of(ClaimAllocation allocation, const std::string& uid) const;

  bool enabled_;
  ConfigGates gates_;
  TypeOf type_of_;
};

}  // namespace nvdra::claims
