#pragma once
// The coordination.k8s.io/v1 Lease as leader election uses it (client-go's LeaseLock): holder,
// duration, acquire/renew times (MicroTime) and the number of transitions. Read with simdjson,
// written with Boost.JSON.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/base/result.hpp"
#include "k8s/object_meta.hpp"

namespace nvdra::k8s {

struct LeaseRecord {
  std::string holder;  // empty: released
  int64_t lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime text, "2025-01-02T03:04:05.123456Z"
  std::string renew_time;
  int64_t lease_transitions = 0;
  bool operator==(const LeaseRecord&) const = default;
};

struct StoredLease {
  ObjectMeta meta;
  LeaseRecord record;
};

Result<StoredLease> decode_lease(std::string_view json);
// A whole Lease; `resource_version` empty for a create (else the update is conditional on it).
std::string encode_lease(const std::string& ns, const std::string& name, const std::string& resource_version,
                         const LeaseRecord& record);
// metav1.MicroTime text of `t` (UTC, microseconds).
std::string micro_time(std::chrono::system_clock::time_point t);

}  // namespace nvdra::k8s
