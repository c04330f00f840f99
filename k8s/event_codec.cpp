#include "k8s/event_codec.hpp"

#include <boost/json.hpp>

#include <fmt/format.h>

#include "agent/base/utf8.hpp"
#include "k8s/lease_codec.hpp"

namespace nvdra::k8s {

namespace json = boost::json;

namespace {

json::object ref_json(const ObjectRef& r) {
  json::object o;
  if (!r.api_version.empty()) o["apiVersion"] = r.api_version;
  if (!r.kind.empty()) o["kind"] = r.kind;
  if (!r.ns.empty()) o["namespace"] = r.ns;
  if (!r.name.empty()) o["name"] = r.name;
  if (!r.uid.empty()) o["uid"] = r.uid;
  if (!r.resource_version.empty()) o["resourceVersion"] = r.resource_version;
  return o;
}

json::object series_json(const EventSeries& s) {
  return json::object{{"count", s.count}, {"lastObservedTime", micro_time(s.last_observed)}};
}

}  // namespace

EventIdentity make_identity(const ObjectRef& regarding, std::string controller, std::string instance,
                            std::chrono::system_clock::time_point now) {
  EventIdentity id;
  id.ns = regarding.ns.empty() ? "default" : regarding.ns;
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  const std::string suffix = fmt::format(".{:x}", nanos);
  // client-go does not shorten; a name near the 253-character limit would make the Event invalid.
  std::string base = regarding.name.substr(0, 253 - suffix.size());
  while (!base.empty() && (base.back() == '.' || base.back() == '-')) base.pop_back();
  id.name = base + suffix;
  id.reporting_controller = truncate_utf8(std::move(controller), kMaxReportingBytes);
  id.reporting_instance = truncate_utf8(std::move(instance), kMaxReportingBytes);
  id.event_time = now;
  return id;
}

std::string encode_event(const EventIdentity& id, const EventInfo& info, const std::optional<EventSeries>& series) {
  json::object ev{{"apiVersion", "events.k8s.io/v1"},
                  {"kind", "Event"},
                  {"metadata", json::object{{"name", id.name}, {"namespace", id.ns}}},
                  {"eventTime", micro_time(id.event_time)},
                  {"reportingController", id.reporting_controller},
                  {"reportingInstance", id.reporting_instance},
                  {"action", truncate_utf8(info.action, kMaxReportingBytes)},
                  {"reason", truncate_utf8(info.reason, kMaxReportingBytes)},
                  {"regarding", ref_json(info.regarding)},
                  {"note", truncate_utf8(info.note, kMaxNoteBytes)},
                  {"type", info.type}};
  if (series) ev["series"] = series_json(*series);
  return json::serialize(ev);
}

std::string encode_series_patch(const EventSeries& series) {
  return json::serialize(json::object{{"series", series_json(series)}});
}

}  // namespace nvdra::k8s
