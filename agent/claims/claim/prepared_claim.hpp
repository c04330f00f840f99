#pragma once
// A prepared claim as the checkpoint records it (upstream gpu plugin's preparedDevices, reference
// §6.1), and the claim status stored with it (§6.1: Go field order). The pipeline writes these
// at PrepareStarted/PrepareCompleted and reads them back for the idempotent fast path, unprepare
// and start-up recovery. Pure; thread-safe.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/claims/claim/claim_source.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::claims {

struct PreparedEntry {
  DeviceType type = DeviceType::kGpu;  // kGpu, kMig or kVfio
  std::string uuid;                    // GPU-… / MIG-… / VFIO uuid
  std::string parent_uuid;             // MIG only, with parent_minor/gi_id/ci_id
  unsigned parent_minor = 0, gi_id = 0, ci_id = 0;
  std::vector<std::string> requests;   // as in the allocation result (may be "<main>/<sub>")
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;
  std::string share_id;             // "ShareID": a share of a multi-allocatable device (consumable shares)
  boost::json::object metadata;     // "Metadata" (DeviceMetadata, device_metadata.hpp); empty: omitted
  std::string pci_bus_id;  // VFIO only: "0000:18:00.0"
  bool operator==(const PreparedEntry&) const = default;
};

struct PreparedGroup {
  std::vector<PreparedEntry> devices;
  bool time_slice_applied = false;
  std::string mps_daemon_id;  // "" when the group has no MPS daemon
  bool operator==(const PreparedGroup&) const = default;
};

// {"devices":[{"gpu":{…},"mig":null}|{"gpu":null,"mig":{"concrete":{…},"device":D}}
//             |{"gpu":null,"mig":null,"vfio":{"info":{"uuid":…,"pciBusID":…},"device":D}}],"configState":{…}}
boost::json::array encode_prepared_groups(const std::vector<PreparedGroup>& groups);
// Errors (kFailedPrecondition) name `claim` and the bad element: the checkpoint was valid JSON
// with a verified checksum, so a shape mismatch means another writer's format.
Result<std::vector<PreparedGroup>> decode_prepared_groups(const boost::json::array& groups, const std::string& claim);

// What kubelet gets: one PreparedDevice per entry, request names reduced to base names.
std::vector<kubelet::PreparedDevice> to_prepared_devices(const std::vector<PreparedGroup>& groups);

// ResourceClaimStatus {"allocation":{"devices":{"results":[…],"config":[…]}}} in Go field order.
boost::json::value encode_claim_status(const ClaimAllocation& allocation);
// The inverse, for rolling back a PrepareStarted claim from its checkpoint entry alone.
Result<ClaimAllocation> decode_claim_status(const boost::json::value& status, const std::string& uid);

// What the per-prepare checks against every other prepared claim need of its results, read in
// place: no copies, no configs. With 1,000 claims prepared, decoding each one's whole status on
// every prepare was most of the prepare's CPU (issue #33).
struct ResultView {
  std::string_view driver, device, share_id;
  bool admin_access = false;
};
std::vector<ResultView> result_views(const boost::json::value& status);

// Whether what a checkpoint entry records of its devices can be read: a completed entry's
// preparedDevices, a started entry's status (what its rollback plans from). An entry that cannot be
// read may own any device on the node, so nothing is destroyed on its behalf (issue #30).
Status entry_readable(const std::string& uid, const CheckpointedClaim& entry);

}  // namespace nvdra::claims
