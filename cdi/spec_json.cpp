#include "cdi/spec_json.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

#include "agent/base/json_slot.hpp"

namespace nvdra::cdi {
namespace {

namespace json = boost::json;

enum Version { k030, k040, k050, k060, k070 };
const char* const kVersionNames[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0"};

Version edits_version(const ContainerEdits& e) {
  Version v = k030;
  if (!e.additional_gids.empty()) v = std::max(v, k070);
  if (std::any_of(e.device_nodes.begin(), e.device_nodes.end(), [](const DeviceNode& n) { return n.host_path; }))
    v = std::max(v, k050);
  if (std::any_of(e.mounts.begin(), e.mounts.end(), [](const Mount& m) { return !m.type.empty(); }))
    v = std::max(v, k040);
  return v;
}

json::array strings(const std::vector<std::string>& in) {
  json::array out;
  for (const auto& s : in) out.emplace_back(s);
  return out;
}

json::object annotations(const std::map<std::string, std::string>& in) {
  json::object out;
  for (const auto& [k, v] : in) out[k] = v;
  return out;
}

json::object node_json(const DeviceNode& n) {
  json::object o;
  o["path"] = n.path;
  if (n.host_path) o["hostPath"] = *n.host_path;
  if (!n.type.empty()) o["type"] = n.type;
  // CDI's Go types tag major and minor omitempty: upstream's /dev/nvidia-uvm and channel0 carry no
  // "minor" (0 is what a runtime reads for it either way).
  if (n.major && *n.major != 0) o["major"] = *n.major;
  if (n.minor && *n.minor != 0) o["minor"] = *n.minor;
  if (n.file_mode) o["fileMode"] = *n.file_mode;
  if (!n.permissions.empty()) o["permissions"] = n.permissions;
  if (n.uid) o["uid"] = *n.uid;
  if (n.gid) o["gid"] = *n.gid;
  return o;
}

json::object mount_json(const Mount& m) {
  json::object o;
  o["hostPath"] = m.host_path;
  o["containerPath"] = m.container_path;
  if (!m.type.empty()) o["type"] = m.type;
  if (!m.options.empty()) o["options"] = strings(m.options);
  return o;
}

json::object hook_json(const Hook& h) {
  json::object o;
  o["hookName"] = h.hook_name;
  o["path"] = h.path;
  if (!h.args.empty()) o["args"] = strings(h.args);
  if (!h.env.empty()) o["env"] = strings(h.env);
  if (h.timeout) o["timeout"] = *h.timeout;
  return o;
}

json::object edits_json(const ContainerEdits& e) {
  json::object o;
  if (!e.env.empty()) o["env"] = strings(e.env);
  if (!e.device_nodes.empty()) {
    json::array a;
    for (const auto& n : e.device_nodes) a.emplace_back(node_json(n));
    o["deviceNodes"] = std::move(a);
  }
  if (!e.mounts.empty()) {
    json::array a;
    for (const auto& m : e.mounts) a.emplace_back(mount_json(m));
    o["mounts"] = std::move(a);
  }
  if (!e.hooks.empty()) {
    json::array a;
    for (const auto& h : e.hooks) a.emplace_back(hook_json(h));
    o["hooks"] = std::move(a);
  }
  if (!e.additional_gids.empty()) {
    json::array a;
    for (auto g : e.additional_gids) a.emplace_back(g);
    o["additionalGids"] = std::move(a);
  }
  return o;
}

}  // namespace

std::string minimum_version(const Spec& spec) {
  Version v = edits_version(spec.spec_edits());
  if (!spec.annotations.empty()) v = std::max(v, k060);
  auto slash = spec.kind.find('/');
  if (slash != std::string::npos && spec.kind.find('.', slash) != std::string::npos) v = std::max(v, k060);
  for (const auto& d : spec.devices) {
    v = std::max(v, edits_version(d.edits));
    if (!d.annotations.empty()) v = std::max(v, k060);
    if (!d.name.empty() && std::isdigit(static_cast<unsigned char>(d.name.front()))) v = std::max(v, k050);
  }
  return kVersionNames[v];
}

namespace {

// Everything but the spec-level edits, which Boost.JSON would write last (objects keep their
// insertion order).
json::object without_edits(const Spec& spec) {
  json::object o;
  o["cdiVersion"] = minimum_version(spec);
  o["kind"] = spec.kind;
  if (!spec.annotations.empty()) o["annotations"] = annotations(spec.annotations);
  json::array devices;
  for (const auto& d : spec.devices) {
    json::object dev;
    dev["name"] = d.name;
    if (!d.annotations.empty()) dev["annotations"] = annotations(d.annotations);
    dev["containerEdits"] = edits_json(d.edits);  // required by the schema, even when empty
    devices.emplace_back(std::move(dev));
  }
  o["devices"] = std::move(devices);
  return o;
}

// A node's claim specs all carry the same spec-level edits (the driver's common edits: its
// libraries, hooks and nodes, most of each file's bytes), shared. Their text is kept per thread and
// reused while the edits stay the same object (a pointer comparison) or equal ones. The key is held,
// so no other edits can take its address meanwhile.
const std::string& edits_text(const SharedEdits& edits) {
  thread_local SharedEdits key;
  thread_local std::string text;
  if (key != edits && (!key || *key != *edits)) text = json::serialize(edits_json(*edits));
  key = edits;
  return text;
}

}  // namespace

json::value to_json(const Spec& spec) {
  json::object o = without_edits(spec);
  if (!spec.spec_edits().empty()) o["containerEdits"] = edits_json(spec.spec_edits());
  return o;
}

std::string serialize(const Spec& spec) {
  if (spec.spec_edits().empty()) return json::serialize(without_edits(spec)) + "\n";
  // The edits' place holds a JSON slot (json_slot.hpp), replaced by their kept text: Boost.JSON
  // writes the key and the separators, and the slot is the document's last value, before its brace
  // (taken from the end, so a value holding U+0001 elsewhere is never taken for it).
  json::object o = without_edits(spec);
  o["containerEdits"] = kJsonSlotValue;
  std::string out = json::serialize(o);
  out.pop_back();  // the closing brace
  if (!out.ends_with(kJsonSlotText)) return json::serialize(to_json(spec)) + "\n";  // not as expected: no reuse
  out.resize(out.size() - kJsonSlotText.size());
  out += edits_text(spec.edits);
  out += "}\n";
  return out;
}

}  // namespace nvdra::cdi
