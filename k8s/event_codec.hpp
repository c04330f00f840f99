#pragma once
// events.k8s.io/v1 Event bodies as client-go's events recorder writes them (tools/events): the
// object on create, and the strategic merge patch that carries a series' count and
// lastObservedTime. Written with Boost.JSON; field limits as the API server validates them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace nvdra::k8s {

// core/v1 ObjectReference: the object an Event is about (`regarding`).
struct ObjectRef {
  std::string api_version;  // "resource.k8s.io/v1", "v1"
  std::string kind;         // "ResourceClaim", "Node"
  std::string ns;           // empty for cluster-scoped objects
  std::string name;
  std::string uid;
  std::string resource_version;
  auto tie() const { return std::tie(api_version, kind, ns, name, uid, resource_version); }
  bool operator<(const ObjectRef& o) const { return tie() < o.tie(); }
  bool operator==(const ObjectRef& o) const { return tie() == o.tie(); }
};

inline constexpr const char* kEventTypeNormal = "Normal";
inline constexpr const char* kEventTypeWarning = "Warning";

// What a caller reports; the recorder adds the reporting controller, instance and times.
struct EventInfo {
  ObjectRef regarding;
  std::string type = kEventTypeWarning;
  std::string reason;  // CamelCase, ≤ 128
  std::string action;  // CamelCase, ≤ 128
  std::string note;    // human text; cut to kMaxNoteBytes
};

inline constexpr std::size_t kMaxNoteBytes = 1024;    // the API server's limit on `note`
inline constexpr std::size_t kMaxReportingBytes = 128;  // reportingController/Instance, reason, action

struct EventSeries {
  int32_t count = 0;  // ≥ 2: the API server rejects a series of one
  std::chrono::system_clock::time_point last_observed;
};

// The Event's stored identity and reporter.
struct EventIdentity {
  std::string ns;    // the regarding object's, or "default" for a cluster-scoped one (as client-go)
  std::string name;  // "<regarding name>.<event time in ns, hex>" (client-go's form)
  std::string reporting_controller;
  std::string reporting_instance;
  std::chrono::system_clock::time_point event_time;
};

EventIdentity make_identity(const ObjectRef& regarding, std::string controller, std::string instance,
                            std::chrono::system_clock::time_point now);

std::string encode_event(const EventIdentity& id, const EventInfo& info, const std::optional<EventSeries>& series);
// {"series":{"count":N,"lastObservedTime":"…"}}: what client-go's CreateTwoWayMergePatch yields
// between the event without and with its series.
std::string encode_series_patch(const EventSeries& series);

}  // namespace nvdra::k8s
