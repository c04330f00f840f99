#include "agent/systemd_bus/status_json.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace nvdra::systemd_bus {
namespace {

template <class T>
boost::json::array array_of(const T& items) {
  boost::json::array out;
  for (const auto& item : items) out.push_back(to_json(item));
  return out;
}

}  // namespace

boost::json::value to_json(const DriverStatus& d) {
  return boost::json::object{
      {"name", d.name}, {"registration", d.registration}, {"published", d.published}, {"detail", d.detail}};
}

boost::json::value to_json(const DeviceStatus& d) {
  return boost::json::object{
      {"driver", d.driver}, {"name", d.name}, {"type", d.type}, {"uuid", d.uuid}, {"health", d.health},
      {"lastXid", d.last_xid}, {"lastXidTime", d.last_xid_time}};
}

boost::json::value to_json(const ClaimStatus& c) {
  boost::json::array devices;
  for (const auto& d : c.devices) devices.emplace_back(d);
  return boost::json::object{{"uid", c.uid},       {"namespace", c.namespace_name}, {"name", c.name},
                             {"driver", c.driver}, {"state", c.state},              {"devices", std::move(devices)}};
}

boost::json::value to_json(const ImexStatus& i) {
  return boost::json::object{
      {"mode", i.mode}, {"unit", i.unit}, {"activeState", i.active_state}, {"subState", i.sub_state}};
}

boost::json::value to_json(const FabricStatus& f) {
  boost::json::array partitions;
  for (const auto& p : f.partitions) {
    boost::json::array modules, claims;
    for (const auto& m : p.modules) modules.emplace_back(m);
    for (const auto& c : p.claims) claims.emplace_back(c);
    partitions.push_back(boost::json::object{{"id", p.id}, {"modules", std::move(modules)}, {"claims", std::move(claims)}});
  }
  return boost::json::object{{"manager", f.manager}, {"partitions", std::move(partitions)}};
}

boost::json::value to_json(const ErrorRecord& e) {
  return boost::json::object{{"timeUsec", e.when_usec}, {"component", e.component}, {"message", e.message}};
}

boost::json::value to_json(const StatusSnapshot& s) {
  return boost::json::object{{"version", s.version},
                             {"nodeName", s.node_name},
                             {"ready", s.ready},
                             {"drivers", array_of(s.drivers)},
                             {"devices", array_of(s.devices)},
                             {"claims", array_of(s.claims)},
                             {"imex", to_json(s.imex)},
                             {"fabric", to_json(s.fabric)},
                             {"lastErrors", array_of(s.last_errors)}};
}

}  // namespace nvdra::systemd_bus
