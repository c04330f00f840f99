#include "agent/drivers/domain_groups.hpp"

#include <boost/json.hpp>

#include "agent/claims/config/config_resolver.hpp"

namespace nvdra::drivers {

namespace json = boost::json;

json::array encode_domain_groups(DomainDeviceKind kind, const kubelet::PreparedDevice& d, const std::string& request,
                                 const std::string& domain) {
  json::array cdi;
  for (const auto& id : d.cdi_device_ids) cdi.emplace_back(id);
  json::object device{{"Requests", json::array{json::value(request)}}, {"PoolName", d.pool_name},
                      {"DeviceName", d.device_name}, {"CDIDeviceIDs", std::move(cdi)}};
  json::object held{{"info", json::object{{"id", 0}}}, {"device", std::move(device)}};
  const bool channel = kind == DomainDeviceKind::kChannel;
  json::object entry;
  entry["channel"] = channel ? json::value(held) : json::value(nullptr);
  entry["daemon"] = channel ? json::value(nullptr) : json::value(std::move(held));
  json::object state{{"Type", channel ? "channel" : "daemon"}, {"ComputeDomain", domain}};
  return json::array{json::object{{"devices", json::array{std::move(entry)}}, {"configState", std::move(state)}}};
}

kubelet::PreparedDevice prepared_device_of(const json::object& o) {
  kubelet::PreparedDevice d;
  if (const auto* r = o.if_contains("Requests"); r && r->is_array())
    for (const auto& v : r->as_array())
      if (v.is_string()) d.request_names.push_back(claims::base_request(std::string(v.as_string())));
  if (const auto* v = o.if_contains("PoolName"); v && v->is_string()) d.pool_name = v->as_string();
  if (const auto* v = o.if_contains("DeviceName"); v && v->is_string()) d.device_name = v->as_string();
  if (const auto* v = o.if_contains("CDIDeviceIDs"); v && v->is_array())
    for (const auto& id : v->as_array())
      if (id.is_string()) d.cdi_device_ids.emplace_back(id.as_string());
  return d;
}

Result<DomainEntry> decode_domain_groups(const json::array& groups, const std::string& claim) {
  DomainEntry out;
  auto bad = [&claim](const std::string& what) {
    return make_error(ErrorCode::kFailedPrecondition,
                      "checkpoint entry of claim " + claim + " is not a compute-domain entry: " + what);
  };
  for (const auto& g : groups) {
    const auto* group = g.if_object();
    const auto* devices = group ? group->if_contains("devices") : nullptr;
    if (!devices || !devices->is_array()) return bad("no devices list");
    if (const auto* st = group->if_contains("configState"); st && st->is_object())
      if (const auto* cd = st->as_object().if_contains("ComputeDomain"); cd && cd->is_string())
        out.domain = cd->as_string();
    for (const auto& e : devices->as_array()) {
      const auto* entry = e.if_object();
      if (!entry) return bad("a device entry is not an object");
      for (auto [name, kind] : {std::pair{"channel", DomainDeviceKind::kChannel},
                                std::pair{"daemon", DomainDeviceKind::kDaemon}}) {
        const auto* held = entry->if_contains(name);
        const auto* dev = held && held->is_object() ? held->as_object().if_contains("device") : nullptr;
        if (!dev || !dev->is_object()) continue;
        out.kind = kind;
        out.devices.push_back(prepared_device_of(dev->as_object()));
      }
    }
  }
  return out;
}

}  // namespace nvdra::drivers
