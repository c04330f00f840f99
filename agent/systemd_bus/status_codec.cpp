#include "agent/systemd_bus/status_codec.hpp"

#include <systemd/sd-bus.h>

#include <cerrno>
#include <functional>
#include <map>

namespace nvdra::systemd_bus {
namespace {

int append_strv(sd_bus_message* m, const std::vector<std::string>& items) {
  int r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "s");
  for (size_t i = 0; r >= 0 && i < items.size(); ++i) r = sd_bus_message_append_basic(m, 's', items[i].c_str());
  return r < 0 ? r : sd_bus_message_close_container(m);
}

template <class T, class Fn>
int append_array(sd_bus_message* m, const char* element, const T& items, Fn fn) {
  int r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, element);
  for (size_t i = 0; r >= 0 && i < items.size(); ++i) r = fn(m, items[i]);
  return r < 0 ? r : sd_bus_message_close_container(m);
}

int append_driver(sd_bus_message* m, const DriverStatus& d) {
  return sd_bus_message_append(m, kDriverSignature, d.name.c_str(), d.registration.c_str(), d.published ? 1 : 0,
                               d.detail.c_str());
}

int append_device(sd_bus_message* m, const DeviceStatus& d) {
  return sd_bus_message_append(m, kDeviceSignature, d.driver.c_str(), d.name.c_str(), d.type.c_str(), d.uuid.c_str(),
                               d.health.c_str(), d.last_xid.c_str(), d.last_xid_time.c_str());
}

int append_error(sd_bus_message* m, const ErrorRecord& e) {
  return sd_bus_message_append(m, kErrorSignature, e.when_usec, e.component.c_str(), e.message.c_str());
}

// Reads an array of structs, one element at a time, with `read` consuming one struct's fields.
template <class T, class Fn>
Status read_array(Message& m, const char* element, T& out, Fn read) {
  std::string inner(element);
  inner = inner.substr(1, inner.size() - 2);  // "(ssbs)" -> "ssbs"
  if (auto st = m.enter_array(element); !st) return st;
  out.clear();
  while (!m.at_end()) {
    if (auto st = m.enter_struct(inner.c_str()); !st) return st;
    typename T::value_type item;
    if (auto st = read(m, item); !st) return st;
    if (auto st = m.exit_container(); !st) return st;
    out.push_back(std::move(item));
  }
  return m.exit_container();
}

Status read_into(Message& m, std::string& out) {
  auto v = m.read_string();
  if (!v) return v.error();
  out = std::move(*v);
  return {};
}

Status read_into(Message& m, bool& out) {
  auto v = m.read_bool();
  if (!v) return v.error();
  out = *v;
  return {};
}

Status read_into(Message& m, uint64_t& out) {
  auto v = m.read_u64();
  if (!v) return v.error();
  out = *v;
  return {};
}

template <class... Fields>
Status read_fields(Message& m, Fields&... fields) {
  Status st;
  ((st.ok() ? (void)(st = read_into(m, fields)) : (void)0), ...);
  return st;
}

Status read_claim_fields(Message& m, ClaimStatus& c) {
  if (auto st = read_fields(m, c.uid, c.namespace_name, c.name, c.driver, c.state); !st) return st;
  auto devices = m.read_strings();
  if (!devices) return devices.error();
  c.devices = std::move(*devices);
  return {};
}

// One entry per property: how to write it and how to read it back.
struct PropertyCodec {
  PropertySpec spec;
  std::function<int(sd_bus_message*, const StatusSnapshot&)> append;
  std::function<Status(Message&, StatusSnapshot&)> read;
  std::function<bool(const StatusSnapshot&, const StatusSnapshot&)> same;
};

template <class Member>
PropertyCodec string_property(const char* name, Member member) {
  return {{name, "s"},
          [member](sd_bus_message* m, const StatusSnapshot& s) {
            return sd_bus_message_append_basic(m, 's', std::invoke(member, s).c_str());
          },
          [member](Message& m, StatusSnapshot& s) { return read_into(m, std::invoke(member, s)); },
          [member](const StatusSnapshot& a, const StatusSnapshot& b) {
            return std::invoke(member, a) == std::invoke(member, b);
          }};
}

const std::vector<PropertyCodec>& codecs() {
  static const std::vector<PropertyCodec> kCodecs = [] {
    std::vector<PropertyCodec> c;
    c.push_back(string_property("Version", &StatusSnapshot::version));
    c.push_back(string_property("NodeName", &StatusSnapshot::node_name));
    c.push_back({{"Ready", "b"},
                 [](sd_bus_message* m, const StatusSnapshot& s) {
                   const int b = s.ready ? 1 : 0;
                   return sd_bus_message_append_basic(m, 'b', &b);
                 },
                 [](Message& m, StatusSnapshot& s) { return read_into(m, s.ready); },
                 [](const StatusSnapshot& a, const StatusSnapshot& b) { return a.ready == b.ready; }});
    c.push_back({{"Drivers", "a(ssbs)"},
                 [](sd_bus_message* m, const StatusSnapshot& s) {
                   return append_array(m, kDriverSignature, s.drivers, append_driver);
                 },
                 [](Message& m, StatusSnapshot& s) {
                   return read_array(m, kDriverSignature, s.drivers, [](Message& in, DriverStatus& d) {
                     return read_fields(in, d.name, d.registration, d.published, d.detail);
                   });
                 },
                 [](const StatusSnapshot& a, const StatusSnapshot& b) { return a.drivers == b.drivers; }});
    c.push_back({{"Devices", "a(sssssss)"},
                 [](sd_bus_message* m, const StatusSnapshot& s) {
                   return append_array(m, kDeviceSignature, s.devices, append_device);
                 },
                 [](Message& m, StatusSnapshot& s) {
                   return read_array(m, kDeviceSignature, s.devices, [](Message& in, DeviceStatus& d) {
                     return read_fields(in, d.driver, d.name, d.type, d.uuid, d.health, d.last_xid, d.last_xid_time);
                   });
                 },
                 [](const StatusSnapshot& a, const StatusSnapshot& b) { return a.devices == b.devices; }});
    c.push_back({{"PreparedClaims", "a(sssssas)"},
                 [](sd_bus_message* m, const StatusSnapshot& s) {
                   return append_array(m, kClaimSignature, s.claims, append_claim);
                 },
                 [](Message& m, StatusSnapshot& s) { return read_array(m, kClaimSignature, s.claims, read_claim_fields); },
                 [](const StatusSnapshot& a, const StatusSnapshot& b) { return a.claims == b.claims; }});
    c.push_back(string_property("ImexMode", [](auto& s) -> auto& { return s.imex.mode; }));
    c.push_back(string_property("ImexUnit", [](auto& s) -> auto& { return s.imex.unit; }));
    c.push_back(string_property("ImexActiveState", [](auto& s) -> auto& { return s.imex.active_state; }));
    c.push_back(string_property("ImexSubState", [](auto& s) -> auto& { return s.imex.sub_state; }));
    c.push_back(string_property("FabricManager", [](auto& s) -> auto& { return s.fabric.manager; }));
    c.push_back({{"FabricPartitions", "a(tasas)"},
                 [](sd_bus_message* m, const StatusSnapshot& s) {
                   return append_array(m, kFabricPartitionSignature, s.fabric.partitions,
                                       [](sd_bus_message* msg, const FabricPartitionStatus& p) {
                                         int r = sd_bus_message_open_container(msg, SD_BUS_TYPE_STRUCT, "tasas");
                                         if (r >= 0) r = sd_bus_message_append_basic(msg, 't', &p.id);
                                         if (r >= 0) r = append_strv(msg, p.modules);
                                         if (r >= 0) r = append_strv(msg, p.claims);
                                         return r < 0 ? r : sd_bus_message_close_container(msg);
                                       });
                 },
                 [](Message& m, StatusSnapshot& s) {
                   return read_array(m, kFabricPartitionSignature, s.fabric.partitions,
                                     [](Message& in, FabricPartitionStatus& p) -> Status {
                                       if (auto st = read_into(in, p.id); !st) return st;
                                       auto modules = in.read_strings();
                                       if (!modules) return modules.error();
                                       p.modules = std::move(*modules);
                                       auto claims = in.read_strings();
                                       if (!claims) return claims.error();
                                       p.claims = std::move(*claims);
                                       return {};
                                     });
                 },
                 [](const StatusSnapshot& a, const StatusSnapshot& b) {
                   return a.fabric.partitions == b.fabric.partitions;
                 }});
    c.push_back({{"LastErrors", "a(tss)"},
                 [](sd_bus_message* m, const StatusSnapshot& s) {
                   return append_array(m, kErrorSignature, s.last_errors, append_error);
                 },
                 [](Message& m, StatusSnapshot& s) {
                   return read_array(m, kErrorSignature, s.last_errors, [](Message& in, ErrorRecord& e) {
                     return read_fields(in, e.when_usec, e.component, e.message);
                   });
                 },
                 [](const StatusSnapshot& a, const StatusSnapshot& b) { return a.last_errors == b.last_errors; }});
    return c;
  }();
  return kCodecs;
}

}  // namespace

const std::vector<PropertySpec>& status_properties() {
  static const std::vector<PropertySpec> kSpecs = [] {
    std::vector<PropertySpec> out;
    for (const auto& c : codecs()) out.push_back(c.spec);
    return out;
  }();
  return kSpecs;
}

int append_claim(sd_bus_message* m, const ClaimStatus& c) {
  int r = sd_bus_message_open_container(m, SD_BUS_TYPE_STRUCT, "sssssas");
  if (r >= 0)
    r = sd_bus_message_append(m, "sssss", c.uid.c_str(), c.namespace_name.c_str(), c.name.c_str(), c.driver.c_str(),
                              c.state.c_str());
  if (r >= 0) r = append_strv(m, c.devices);
  return r < 0 ? r : sd_bus_message_close_container(m);
}

int append_property(sd_bus_message* m, const StatusSnapshot& s, std::string_view property) {
  for (const auto& c : codecs())
    if (property == c.spec.name) return c.append(m, s);
  return -ENOENT;
}

std::vector<const char*> changed_properties(const StatusSnapshot& before, const StatusSnapshot& after) {
  std::vector<const char*> out;
  for (const auto& c : codecs())
    if (!c.same(before, after)) out.push_back(c.spec.name);
  return out;
}

Status decode_properties(Message& reply, StatusSnapshot& out) {
  if (auto st = reply.enter_array("{sv}"); !st) return st;
  while (!reply.at_end()) {
    if (int r = sd_bus_message_enter_container(reply.get(), SD_BUS_TYPE_DICT_ENTRY, "sv"); r <= 0)
      return errno_error(r == 0 ? -ENXIO : r, "GetAll reply of " + std::string(kStatusInterface));
    auto name = reply.read_string();
    if (!name) return name.error();
    const PropertyCodec* codec = nullptr;
    for (const auto& c : codecs())
      if (*name == c.spec.name) codec = &c;
    if (codec == nullptr) {
      if (int r = sd_bus_message_skip(reply.get(), "v"); r < 0) return errno_error(r, "property " + *name);
    } else {
      auto fail = [&](const Status& st) {
        return make_error(ErrorCode::kInvalidArgument, "property " + *name + " (expected type " +
                                                           codec->spec.signature + "): " + st.error().message);
      };
      if (auto st = reply.enter_variant(codec->spec.signature); !st) return fail(st);
      if (auto st = codec->read(reply, out); !st) return fail(st);
      if (auto st = reply.exit_container(); !st) return fail(st);
    }
    if (auto st = reply.exit_container(); !st) return st;
  }
  return reply.exit_container();
}

Result<ClaimStatus> decode_claim(Message& m) {
  ClaimStatus c;
  if (auto st = m.enter_struct("sssssas"); !st) return st.error();
  if (auto st = read_claim_fields(m, c); !st) return st.error();
  if (auto st = m.exit_container(); !st) return st.error();
  return c;
}

std::vector<DeviceStatus> health_changes(const StatusSnapshot& before, const StatusSnapshot& after) {
  std::vector<DeviceStatus> out;
  for (const auto& d : after.devices) {
    for (const auto& old : before.devices) {
      if (old.driver != d.driver || old.name != d.name) continue;
      if (old.health != d.health || old.last_xid != d.last_xid || old.last_xid_time != d.last_xid_time)
        out.push_back(d);
      break;
    }
  }
  return out;
}

}  // namespace nvdra::systemd_bus
