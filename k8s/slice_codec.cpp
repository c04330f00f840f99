#include "k8s/slice_codec.hpp"

#include "k8s/capacity_policy_codec.hpp"

#include <simdjson.h>

#include <algorithm>
#include <boost/json.hpp>

namespace nvdra::k8s {
namespace {

namespace json = boost::json;
namespace od = simdjson::ondemand;

json::object quantity_map(const std::map<std::string, std::string>& counters) {
  json::object out;
  for (const auto& [name, value] : counters) out[name] = json::object{{"value", value}};
  return out;
}

json::object encode_device(const PublishedDevice& d) {
  json::object dev{{"name", d.name}};
  json::object attrs;
  for (const auto& [key, value] : d.attributes) {
    if (const auto* b = std::get_if<bool>(&value)) attrs[key] = json::object{{"bool", *b}};
    else if (const auto* i = std::get_if<int64_t>(&value)) attrs[key] = json::object{{"int", *i}};
    else if (const auto* s = std::get_if<std::string>(&value)) attrs[key] = json::object{{"string", *s}};
    else if (const auto* v = std::get_if<SemVer>(&value)) attrs[key] = json::object{{"version", v->value}};
    // 1.36+ with DRAListTypeAttributes; the planner drops them for servers that do not serve `ints`.
    else if (const auto* l = std::get_if<std::vector<int64_t>>(&value)) attrs[key] = json::object{{"ints", json::array(l->begin(), l->end())}};
  }
  if (!attrs.empty()) dev["attributes"] = std::move(attrs);
  if (!d.capacity.empty()) {
    json::object caps;
    for (const auto& [name, value] : d.capacity) {
      const auto policy = d.request_policies.find(name);
      caps[name] = encode_capacity(value, policy == d.request_policies.end() ? nullptr : &policy->second);
    }
    dev["capacity"] = std::move(caps);
  }
  if (d.allow_multiple_allocations) dev["allowMultipleAllocations"] = true;
  if (!d.consumes_counters.empty()) {
    json::array cc;
    for (const auto& c : d.consumes_counters) cc.push_back(json::object{{"counterSet", c.counter_set}, {"counters", quantity_map(c.counters)}});
    dev["consumesCounters"] = std::move(cc);
  }
  if (!d.taints.empty()) {
    json::array taints;
    for (const auto& t : d.taints) {
      json::object o{{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) o["value"] = t.value;
      taints.push_back(std::move(o));
    }
    dev["taints"] = std::move(taints);
  }
  return dev;
}

// --- decoding --------------------------------------------------------------------------------

struct Decoder {
  std::string field;  // where the first problem was found
  bool fail(std::string f) {
    field = std::move(f);
    return false;
  }

  bool quantities(od::value v, std::map<std::string, std::string>& out, const std::string& where) {
    od::object obj;
    if (v.get_object().get(obj)) return fail(where);
    for (auto f : obj) {
      std::string_view key, text;
      od::object q;
      if (f.unescaped_key().get(key) || f.value().get_object().get(q)) return fail(where);
      if (q.find_field_unordered("value").get_string().get(text)) return fail(where + "." + std::string(key));
      out.emplace(std::string(key), std::string(text));
    }
    return true;
  }

  bool attribute(od::value v, AttributeValue& out, const std::string& where) {
    od::object obj;
    if (v.get_object().get(obj)) return fail(where);
    for (auto f : obj) {
      std::string_view key;
      if (f.unescaped_key().get(key)) return fail(where);
      std::string_view s;
      if (key == "bool") { bool b; if (f.value().get_bool().get(b)) return fail(where); out = b; }
      else if (key == "int") { int64_t i; if (f.value().get_int64().get(i)) return fail(where); out = i; }
      else if (key == "string") { if (f.value().get_string().get(s)) return fail(where); out = std::string(s); }
      else if (key == "version") { if (f.value().get_string().get(s)) return fail(where); out = SemVer{std::string(s)}; }
      else if (key == "ints") {
        od::array arr;
        if (f.value().get_array().get(arr)) return fail(where);
        std::vector<int64_t> list;
        for (auto item : arr) {
          int64_t i;
          if (item.get_int64().get(i)) return fail(where);
          list.push_back(i);
        }
        out = std::move(list);
      }
    }
    return true;
  }

  bool device(od::value v, PublishedDevice& d, const std::string& where) {
    od::object obj;
    if (v.get_object().get(obj)) return fail(where);
    for (auto f : obj) {
      std::string_view key, s;
      if (f.unescaped_key().get(key)) return fail(where);
      const std::string at = where + "." + std::string(key);
      if (key == "name") {
        if (f.value().get_string().get(s)) return fail(at);
        d.name = s;
      } else if (key == "attributes") {
        od::object attrs;
        if (f.value().get_object().get(attrs)) return fail(at);
        for (auto a : attrs) {
          std::string_view akey;
          AttributeValue value;
          if (a.unescaped_key().get(akey) || !attribute(a.value(), value, at + "." + std::string(akey))) return fail(at);
          d.attributes.emplace(std::string(akey), std::move(value));
        }
      } else if (key == "capacity") {
        od::object caps;
        if (f.value().get_object().get(caps)) return fail(at);
        for (auto c : caps) {
          std::string_view ckey;
          std::string value;
          std::optional<CapacityRequestPolicy> policy;
          if (c.unescaped_key().get(ckey) || !decode_capacity(c.value(), value, policy)) return fail(at);
          d.capacity.emplace(std::string(ckey), std::move(value));
          if (policy) d.request_policies.emplace(std::string(ckey), std::move(*policy));
        }
      } else if (key == "allowMultipleAllocations") {
        bool b = false;
        if (f.value().get_bool().get(b)) return fail(at);
        d.allow_multiple_allocations = b;
      } else if (key == "consumesCounters") {
        od::array arr;
        if (f.value().get_array().get(arr)) return fail(at);
        for (auto item : arr) {
          CounterConsumption c;
          od::object co;
          std::string_view cs;
          if (item.get_object().get(co)) return fail(at);
          for (auto cf : co) {
            std::string_view ck;
            if (cf.unescaped_key().get(ck)) return fail(at);
            if (ck == "counterSet" && !cf.value().get_string().get(cs)) c.counter_set = cs;
            else if (ck == "counters" && !quantities(cf.value(), c.counters, at)) return false;
          }
          d.consumes_counters.push_back(std::move(c));
        }
      } else if (key == "taints") {
        od::array arr;
        if (f.value().get_array().get(arr)) return fail(at);
        for (auto item : arr) {
          DeviceTaint t;
          od::object to;
          if (item.get_object().get(to)) return fail(at);
          for (auto tf : to) {
            std::string_view tk, tv;
            if (tf.unescaped_key().get(tk)) return fail(at);
            if (tk == "timeAdded" || tf.value().get_string().get(tv)) continue;
            if (tk == "key") t.key = tv;
            else if (tk == "value") t.value = tv;
            else if (tk == "effect") t.effect = tv;
          }
          d.taints.push_back(std::move(t));
        }
      }
    }
    return true;
  }

  bool spec(od::value v, SliceObject& s) {
    od::object obj;
    if (v.get_object().get(obj)) return fail("spec");
    for (auto f : obj) {
      std::string_view key, text;
      if (f.unescaped_key().get(key)) return fail("spec");
      if (key == "driver") { if (f.value().get_string().get(text)) return fail("spec.driver"); s.driver = text; }
      else if (key == "nodeName") { if (f.value().get_string().get(text)) return fail("spec.nodeName"); s.node_name = text; }
      else if (key == "pool") {
        od::object pool;
        if (f.value().get_object().get(pool)) return fail("spec.pool");
        for (auto pf : pool) {
          std::string_view pk;
          if (pf.unescaped_key().get(pk)) return fail("spec.pool");
          if (pk == "name") { if (pf.value().get_string().get(text)) return fail("spec.pool.name"); s.pool_name = text; }
          else if (pk == "generation") { if (pf.value().get_int64().get(s.generation)) return fail("spec.pool.generation"); }
          else if (pk == "resourceSliceCount") { if (pf.value().get_int64().get(s.resource_slice_count)) return fail("spec.pool.resourceSliceCount"); }
        }
      } else if (key == "devices") {
        od::array arr;
        if (f.value().get_array().get(arr)) continue;  // null
        std::size_t i = 0;
        for (auto item : arr) {
          PublishedDevice d;
          od::value v;
          const std::string at = "spec.devices[" + std::to_string(i++) + "]";
          // value_unsafe() of a malformed item is a value without an iterator (UB, found by fuzz_slice).
          if (item.get(v)) return fail(at);
          if (!device(v, d, at)) return false;
          s.content.devices.push_back(std::move(d));
        }
      } else if (key == "sharedCounters") {
        od::array arr;
        if (f.value().get_array().get(arr)) continue;
        for (auto item : arr) {
          CounterSet cs;
          od::object co;
          if (item.get_object().get(co)) return fail("spec.sharedCounters");
          for (auto cf : co) {
            std::string_view ck;
            if (cf.unescaped_key().get(ck)) return fail("spec.sharedCounters");
            if (ck == "name" && !cf.value().get_string().get(text)) cs.name = text;
            else if (ck == "counters" && !quantities(cf.value(), cs.counters, "spec.sharedCounters")) return false;
          }
          s.content.shared_counters.push_back(std::move(cs));
        }
      }
    }
    return true;
  }

  bool metadata(od::value v, SliceObject& s) {
    od::object obj;
    if (v.get_object().get(obj)) return fail("metadata");
    for (auto f : obj) {
      std::string_view key, text;
      if (f.unescaped_key().get(key)) return fail("metadata");
      if (key == "name" && !f.value().get_string().get(text)) s.name = text;
      else if (key == "uid" && !f.value().get_string().get(text)) s.uid = text;
      else if (key == "resourceVersion" && !f.value().get_string().get(text)) s.resource_version = text;
      else if (key == "ownerReferences") {
        od::array arr;
        if (f.value().get_array().get(arr)) continue;
        for (auto item : arr) {
          OwnerReference o;
          od::object oo;
          if (item.get_object().get(oo)) return fail("metadata.ownerReferences");
          for (auto of : oo) {
            std::string_view ok, ov;
            if (of.unescaped_key().get(ok)) return fail("metadata.ownerReferences");
            if (ok == "controller") { bool b = false; if (!of.value().get_bool().get(b)) o.controller = b; continue; }
            if (of.value().get_string().get(ov)) continue;
            if (ok == "apiVersion") o.api_version = ov;
            else if (ok == "kind") o.kind = ov;
            else if (ok == "name") o.name = ov;
            else if (ok == "uid") o.uid = ov;
          }
          s.owners.push_back(std::move(o));
        }
      }
    }
    return true;
  }
};

}  // namespace

void canonicalize(SliceContent& content) {
  std::sort(content.devices.begin(), content.devices.end(),
            [](const PublishedDevice& a, const PublishedDevice& b) { return a.name < b.name; });
}

std::string encode_slice(const SliceObject& s) {
  json::object meta;
  if (!s.name.empty()) meta["name"] = s.name;
  else meta["generateName"] = s.generate_name;
  if (!s.resource_version.empty()) meta["resourceVersion"] = s.resource_version;
  if (!s.uid.empty()) meta["uid"] = s.uid;
  if (!s.owners.empty()) {
    json::array owners;
    for (const auto& o : s.owners) {
      owners.push_back(json::object{{"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name},
                                    {"uid", o.uid}, {"controller", o.controller}});
    }
    meta["ownerReferences"] = std::move(owners);
  }
  json::object spec{{"driver", s.driver},
                    {"pool", json::object{{"name", s.pool_name}, {"generation", s.generation},
                                          {"resourceSliceCount", s.resource_slice_count}}}};
  if (!s.node_name.empty()) spec["nodeName"] = s.node_name;
  if (!s.content.devices.empty()) {
    json::array devices;
    for (const auto& d : s.content.devices) devices.push_back(encode_device(d));
    spec["devices"] = std::move(devices);
  }
  if (!s.content.shared_counters.empty()) {
    json::array sets;
    for (const auto& c : s.content.shared_counters) sets.push_back(json::object{{"name", c.name}, {"counters", quantity_map(c.counters)}});
    spec["sharedCounters"] = std::move(sets);
  }
  return json::serialize(json::object{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"},
                                      {"metadata", std::move(meta)}, {"spec", std::move(spec)}});
}

Result<SliceObject> decode_slice(std::string_view text) {
  od::parser parser;
  simdjson::padded_string padded(text);
  od::document doc;
  od::object root;
  SliceObject s;
  Decoder dec;
  auto bad = [&](const std::string& field) {
    Error e = make_error(ErrorCode::kInvalidArgument, "ResourceSlice " + (s.name.empty() ? std::string("?") : s.name) +
                                                         ": cannot decode field " + field);
    e.field = field;
    return e;
  };
  if (parser.iterate(padded).get(doc) || doc.get_object().get(root)) return bad("<root>");
  for (auto f : root) {
    std::string_view key;
    if (f.unescaped_key().get(key)) return bad("<root>");
    if (key == "metadata" && !dec.metadata(f.value(), s)) return bad(dec.field);
    if (key == "spec" && !dec.spec(f.value(), s)) return bad(dec.field);
  }
  canonicalize(s.content);
  // The API server refuses a slice whose device names repeat; one that does anyway would decode to
  // an order that sorting cannot fix (found by fuzz_slice: "spec" or "devices" given twice).
  const auto same = std::adjacent_find(s.content.devices.begin(), s.content.devices.end(),
                                       [](const PublishedDevice& a, const PublishedDevice& b) { return a.name == b.name; });
  if (same != s.content.devices.end()) return bad("spec.devices[].name (\"" + same->name + "\" given twice)");
  return s;
}

}  // namespace nvdra::k8s
