#pragma once
// The io.nvdra.Agent1 D-Bus interface: names, property signatures, and the one codec both sides
// use — StatusService writes properties with append_property(), nvdractl reads them back with
// decode_properties(). Keeping both directions here means the wire format cannot drift.
//
//   object /io/nvdra/Agent1, interface io.nvdra.Agent1, well-known name io.nvdra.Agent1
//   properties (read-only; all but Version emit PropertiesChanged: with their value, except
//   PreparedClaims, which is named as invalidated, so a listener reads it with Get or GetClaim when it
//   cares: with 1,000 claims its value is ~100 kB, and every kubelet call changes it):
//     Version s, NodeName s, Ready b,
//     Drivers a(ssbs)          name, registration, published, detail
//     Devices a(sssssss)       driver, name, type, uuid, health, last XID, its time
//     PreparedClaims a(sssssas)   uid, namespace, name, driver, state, devices
//     ImexMode s, ImexUnit s, ImexActiveState s, ImexSubState s
//     LastErrors a(tss)        when (µs since the epoch), component, message
//   methods: GetStatusJson() -> s json;  GetClaim(s uid) -> (sssssas) claim,
//            io.nvdra.Agent1.Error.NotFound when the agent holds no such claim.
//   signals: DeviceHealthChanged(s driver, s device, s health, s last_xid, s last_xid_time), one per
//            device whose health or last XID changed (a device that only appears or goes sends none).
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/systemd_bus/bus_message.hpp"
#include "agent/systemd_bus/status_snapshot.hpp"

struct sd_bus_message;

namespace nvdra::systemd_bus {

inline constexpr const char* kStatusBusName = "io.nvdra.Agent1";
inline constexpr const char* kStatusObjectPath = "/io/nvdra/Agent1";
inline constexpr const char* kStatusInterface = "io.nvdra.Agent1";
inline constexpr const char* kStatusNotFoundError = "io.nvdra.Agent1.Error.NotFound";
inline constexpr const char* kDeviceHealthChangedSignal = "DeviceHealthChanged";

inline constexpr const char* kDriverSignature = "(ssbs)";
inline constexpr const char* kDeviceSignature = "(sssssss)";
inline constexpr const char* kClaimSignature = "(sssssas)";
inline constexpr const char* kErrorSignature = "(tss)";
inline constexpr const char* kFabricPartitionSignature = "(tasas)";

struct PropertySpec {
  const char* name;
  const char* signature;
};
// Every property of the interface, in introspection order.
const std::vector<PropertySpec>& status_properties();

// Appends the value of `property` (no variant around it). Negative errno on failure; -ENOENT for
// a name that is not a property of the interface.
int append_property(sd_bus_message* m, const StatusSnapshot& s, std::string_view property);
int append_claim(sd_bus_message* m, const ClaimStatus& claim);

// The properties whose value differs between two snapshots, in status_properties() order.
std::vector<const char*> changed_properties(const StatusSnapshot& before, const StatusSnapshot& after);

// The devices present in both snapshots whose health, last XID or its time differ (after's rows).
std::vector<DeviceStatus> health_changes(const StatusSnapshot& before, const StatusSnapshot& after);

// Reads an a{sv} (the reply of Properties.GetAll) into `out`. Unknown properties are skipped so an
// older nvdractl can read a newer agent; a known one with the wrong type is an error naming it.
Status decode_properties(Message& reply, StatusSnapshot& out);
Result<ClaimStatus> decode_claim(Message& m);

}  // namespace nvdra::systemd_bus
