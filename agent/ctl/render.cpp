#include "agent/ctl/render.hpp"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <ctime>

#include "agent/ctl/table.hpp"
#include "agent/systemd_bus/status_json.hpp"

namespace nvdra::ctl {
namespace {

using systemd_bus::StatusSnapshot;

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

std::string imex_state(const systemd_bus::ImexStatus& i) {
  if (i.active_state.empty()) return "not watched";
  return i.active_state + (i.sub_state.empty() ? "" : " (" + i.sub_state + ")");
}

std::string devices_table(const StatusSnapshot& s) {
  Table t({"DRIVER", "NAME", "TYPE", "UUID", "HEALTH", "LAST XID", "AT"});
  for (const auto& d : s.devices)
    t.add({d.driver, d.name, d.type, d.uuid, d.health, d.last_xid.empty() ? "-" : d.last_xid,
           d.last_xid_time.empty() ? "-" : d.last_xid_time});
  return t.render();
}

std::string claims_table(const StatusSnapshot& s) {
  Table t({"NAMESPACE", "NAME", "UID", "DRIVER", "STATE", "DEVICES"});
  for (const auto& c : s.claims) t.add({c.namespace_name, c.name, c.uid, c.driver, c.state, join(c.devices, ",")});
  return t.render();
}

std::string imex_table(const StatusSnapshot& s) {
  Table t({"MODE", "UNIT", "ACTIVE", "SUB"});
  t.add({s.imex.mode, s.imex.unit, s.imex.active_state, s.imex.sub_state});
  return t.render();
}

std::string fabric_table(const StatusSnapshot& s) {
  Table t({"PARTITION", "MODULES", "CLAIMS"});
  for (const auto& p : s.fabric.partitions) t.add({std::to_string(p.id), join(p.modules, ","), join(p.claims, ",")});
  return "fabric manager: " + (s.fabric.manager.empty() ? std::string("not used") : s.fabric.manager) + "\n" +
         t.render();
}

std::string status_text(const StatusSnapshot& s) {
  std::string out;
  size_t unhealthy = 0, unknown = 0;
  for (const auto& d : s.devices) {
    unhealthy += d.health == systemd_bus::kHealthUnhealthy ? 1 : 0;
    unknown += d.health == systemd_bus::kHealthUnknown ? 1 : 0;
  }
  Table summary({"AGENT", "VALUE"});
  summary.add({"version", s.version});
  summary.add({"node", s.node_name});
  summary.add({"ready", s.ready ? "yes" : "no"});
  summary.add({"devices", std::to_string(s.devices.size()) + " (" + std::to_string(unhealthy) + " unhealthy, " +
                             std::to_string(unknown) + " health unknown)"});
  summary.add({"prepared claims", std::to_string(s.claims.size())});
  summary.add({"imex", s.imex.mode.empty() ? "" : s.imex.mode + ", " + s.imex.unit + " " + imex_state(s.imex)});
  summary.add({"fabric manager", s.fabric.manager.empty() ? "not used"
                                 : s.fabric.manager + ", " + std::to_string(s.fabric.partitions.size()) +
                                       " partitions active"});
  out += summary.render();
  Table drivers({"DRIVER", "REGISTRATION", "PUBLISHED", "DETAIL"});
  for (const auto& d : s.drivers) drivers.add({d.name, d.registration, d.published ? "yes" : "no", d.detail});
  out += "\n" + drivers.render();
  if (!s.last_errors.empty()) {
    Table errors({"TIME", "COMPONENT", "ERROR"});
    for (const auto& e : s.last_errors) errors.add({format_time(e.when_usec), e.component, e.message});
    out += "\n" + errors.render();
  }
  return out;
}

template <class T>
boost::json::array json_array(const T& items) {
  boost::json::array out;
  for (const auto& item : items) out.push_back(systemd_bus::to_json(item));
  return out;
}

}  // namespace

std::string format_time(uint64_t usec) {
  const std::time_t secs = static_cast<std::time_t>(usec / 1000000ULL);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string render(const StatusSnapshot& s, Command command, Format format) {
  if (format == Format::kJson) {
    boost::json::value v;
    switch (command) {
      case Command::kStatus: v = systemd_bus::to_json(s); break;
      case Command::kDevices: v = json_array(s.devices); break;
      case Command::kClaims: v = json_array(s.claims); break;
      case Command::kImex: v = systemd_bus::to_json(s.imex); break;
      case Command::kFabric: v = systemd_bus::to_json(s.fabric); break;
    }
    return boost::json::serialize(v) + "\n";
  }
  switch (command) {
    case Command::kStatus: return status_text(s);
    case Command::kDevices: return devices_table(s);
    case Command::kClaims: return claims_table(s);
    case Command::kImex: return imex_table(s);
    case Command::kFabric: return fabric_table(s);
  }
  return {};
}

}  // namespace nvdra::ctl
