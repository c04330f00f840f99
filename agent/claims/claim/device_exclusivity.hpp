#pragma once
// Node-local safety as upstream's gpu-kubelet-plugin has it (validateNoOverlappingPreparedDevices):
// a device this node has already prepared for one claim is refused to another, with upstream's
// message "requested device <device> is already allocated to different claim <uid>". A device is
// shared only where Kubernetes says it may be: when either claim holds it with adminAccess (as
// upstream: an admin claim neither takes a device nor is refused one), or when both hold it as a
// share of a multi-allocatable device (both results carry a shareID; nvdra's addition, upstream
// compares the shares' configs behind its ConsumableShares gate).
//
// Unlike upstream, which prepares one claim at a time under a node-wide lock, nvdra prepares
// different claims concurrently; so entries in PrepareStarted count as well as completed ones. The
// pipeline runs this check and its PrepareStarted commit without suspending in between, so two
// concurrent prepares of the same device cannot both pass.
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/claims/config/config_resolver.hpp"

namespace nvdra::claims {

// `results` are the incoming claim's (other drivers' are ignored); `uid` is its UID. The error is
// kFailedPrecondition; claims are visited in UID order, devices in result order.
Status check_device_exclusivity(const Checkpoint& checkpoint, const std::string& uid,
                                const std::vector<AllocationResult>& results, std::string_view driver);

}  // namespace nvdra::claims
