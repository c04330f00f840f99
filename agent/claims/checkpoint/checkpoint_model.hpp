#pragma once
// The checkpoint's content and its on-disk encoding, compatible with the upstream Go plugin's
// checkpoint.json (../shared/reference/upstream-driver.md §6.1–6.2): top-level
// {"checksum":N,"v1":{…},"v2":{"checksum":M,"preparedClaims":{…},"nodeBootID":"…"}}, Go
// encoding/json byte layout (struct field order, sorted map keys, omitempty, HTML escaping) and
// upstream's checksum (FNV-1a 32 over go-spew's rendering of the bytes).
//
// `status` and `preparedDevices` are kept as JSON values in the order they were given: the Go
// plugin re-marshals them through its structs to verify the checksum, so they must already be in
// Go's field order (the API server's own serialization of ResourceClaimStatus is; build
// preparedDevices in upstream's order). Pure functions; safe from any thread.
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::claims {

inline constexpr std::string_view kCheckpointFileName = "checkpoint.json";

// PrepareAborted exists only in the compute-domain plugin's checkpoints.
enum class ClaimState { kPrepareStarted, kPrepareCompleted, kPrepareAborted };
std::string_view to_string(ClaimState state);

struct CheckpointedClaim {
  ClaimState state = ClaimState::kPrepareStarted;
  boost::json::value status = boost::json::object();  // resource.k8s.io ResourceClaimStatus
  boost::json::array prepared_devices;                // upstream PreparedDeviceGroup list (§6.1)
  std::string name;
  std::string ns;
  std::string aborted_at;  // RFC3339; compute-domain plugin only
  bool operator==(const CheckpointedClaim&) const = default;
};

struct Checkpoint {
  std::string node_boot_id;
  std::map<std::string, CheckpointedClaim> claims;  // by claim UID; std::map = Go's sorted map keys
  bool operator==(const Checkpoint&) const = default;
};

// The file's bytes: compact JSON with both checksums set and the v1 mirror of completed claims.
std::string encode_checkpoint(const Checkpoint& checkpoint);

// One claim's value in the file, as upstream's Go structs write it: v2 (every state) and the v1 mirror
// (completed claims only). encode_checkpoint and CheckpointEncoder both build on these.
boost::json::object encode_claim_v2(const CheckpointedClaim& c, const boost::json::storage_ptr& sp = {});
boost::json::object encode_claim_v1(const CheckpointedClaim& c, const boost::json::storage_ptr& sp = {});

// Parses and verifies a file's bytes. A parse error, a missing or wrong checksum, or an unknown
// claim state is kFailedPrecondition naming `path` (for messages only); so is a top-level key
// other than checksum, v1 and v2 (a newer writer's format), with field "version". Reads v2 when present,
// else converts v1 (every claim PrepareCompleted, without name/namespace).
Result<Checkpoint> decode_checkpoint(std::string_view bytes, const std::string& path);

// Upstream checksum.New: FNV-1a 32 over "([]uint8)[b0 b1 …]" (go-spew %#v of the bytes).
uint32_t go_checksum(std::string_view bytes);

// boost::json::serialize plus the escapes Go's encoding/json adds (<, >, & and U+2028/9).
// Floating-point numbers are not reformatted: upstream's checkpoint holds none.
std::string go_json(const boost::json::value& value);

}  // namespace nvdra::claims
