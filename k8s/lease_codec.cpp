#include "k8s/lease_codec.hpp"

#include <simdjson.h>

#include <boost/json.hpp>

#include <ctime>

#include <fmt/format.h>

namespace nvdra::k8s {

Result<StoredLease> decode_lease(std::string_view json) {
  auto meta = read_object_meta(json);
  if (!meta) return meta.error();
  StoredLease out;
  out.meta = std::move(*meta);
  namespace od = simdjson::ondemand;
  od::parser parser;
  simdjson::padded_string padded(json);
  od::document doc;
  od::object spec;
  if (parser.iterate(padded).get(doc)) return make_error(ErrorCode::kInvalidArgument, "Lease is not JSON");
  if (doc.find_field_unordered("spec").get_object().get(spec)) return out;  // no spec: nobody holds it
  for (auto field : spec) {
    std::string_view key, text;
    int64_t number = 0;
    if (field.unescaped_key().get(key)) break;
    auto value = field.value();
    if (key == "holderIdentity" && !value.get_string().get(text)) out.record.holder = text;
    if (key == "acquireTime" && !value.get_string().get(text)) out.record.acquire_time = text;
    if (key == "renewTime" && !value.get_string().get(text)) out.record.renew_time = text;
    if (key == "leaseDurationSeconds" && !value.get_int64().get(number)) out.record.lease_duration_seconds = number;
    if (key == "leaseTransitions" && !value.get_int64().get(number)) out.record.lease_transitions = number;
  }
  return out;
}

std::string encode_lease(const std::string& ns, const std::string& name, const std::string& resource_version,
                         const LeaseRecord& record) {
  boost::json::object meta{{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  boost::json::object spec;
  if (!record.holder.empty()) spec["holderIdentity"] = record.holder;
  spec["leaseDurationSeconds"] = record.lease_duration_seconds;
  if (!record.acquire_time.empty()) spec["acquireTime"] = record.acquire_time;
  if (!record.renew_time.empty()) spec["renewTime"] = record.renew_time;
  spec["leaseTransitions"] = record.lease_transitions;
  boost::json::object lease{{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}};
  lease["metadata"] = std::move(meta);
  lease["spec"] = std::move(spec);
  return boost::json::serialize(lease);
}

std::string micro_time(std::chrono::system_clock::time_point t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
}

}  // namespace nvdra::k8s
