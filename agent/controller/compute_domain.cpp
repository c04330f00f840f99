#include "agent/controller/compute_domain.hpp"

#include <simdjson.h>

#include <boost/json.hpp>

#include <algorithm>
#include <set>
#include <string_view>

namespace nvdra::controller {

namespace od = simdjson::ondemand;
namespace json = boost::json;

namespace {

Error invalid(std::string message) { return Error{ErrorCode::kInvalidArgument, std::move(message)}; }

bool unique_keys(simdjson::dom::element e) {
  if (simdjson::dom::object obj; !e.get_object().get(obj)) {
    std::set<std::string_view> seen;
    for (auto [key, value] : obj)
      if (!seen.insert(key).second || !unique_keys(value)) return false;
  } else if (simdjson::dom::array arr; !e.get_array().get(arr)) {
    for (auto item : arr)
      if (!unique_keys(item)) return false;
  }
  return true;
}

// On-demand parsing checks only what it reads, and reads every duplicate key where Boost.JSON keeps
// one: an object malformed after the fields read, or with a key twice, decoded here while the
// read-modify-write below refused it or wrote another object (both found by fuzz_compute_domain).
// The API server never sends either, so the DOM parser validates the whole text first.
bool well_formed(const simdjson::padded_string& text) {
  simdjson::dom::parser dom;
  simdjson::dom::element root;
  return !dom.parse(text).get(root) && unique_keys(root);
}

// metadata fields common to both objects.
struct Meta {
  std::string name, ns, uid, resource_version;
  std::vector<std::string> finalizers;
  std::string owner_label;
  bool deleting = false;
};

bool read_meta(od::object meta, Meta& out) {
  for (auto field : meta) {
    std::string_view key, text;
    if (field.unescaped_key().get(key)) return false;
    auto value = field.value();
    if (key == "name" && !value.get_string().get(text)) out.name = text;
    if (key == "namespace" && !value.get_string().get(text)) out.ns = text;
    if (key == "uid" && !value.get_string().get(text)) out.uid = text;
    if (key == "resourceVersion" && !value.get_string().get(text)) out.resource_version = text;
    if (key == "deletionTimestamp" && !value.get_string().get(text)) out.deleting = !text.empty();
    if (key == "finalizers") {
      od::array items;
      if (value.get_array().get(items)) continue;
      for (auto item : items) {
        if (!item.get_string().get(text)) out.finalizers.emplace_back(text);
      }
    }
    if (key == "labels") {
      od::object labels;
      if (value.get_object().get(labels)) continue;
      for (auto label : labels) {
        std::string_view lk;
        if (!label.unescaped_key().get(lk) && lk == kComputeDomainLabel && !label.value().get_string().get(text)) {
          out.owner_label = text;
        }
      }
    }
  }
  return true;
}

}  // namespace

bool ComputeDomain::has_finalizer() const {
  return std::find(finalizers.begin(), finalizers.end(), kComputeDomainFinalizer) != finalizers.end();
}

Result<ComputeDomain> decode_compute_domain(std::string_view text) {
  od::parser parser;
  simdjson::padded_string padded(text);
  od::document doc;
  od::object root;
  if (!well_formed(padded) || parser.iterate(padded).get(doc) || doc.get_object().get(root))
    return invalid("ComputeDomain is not a JSON object");
  ComputeDomain cd;
  Meta meta;
  for (auto field : root) {
    std::string_view key, value;
    if (field.unescaped_key().get(key)) return invalid("ComputeDomain: unreadable field");
    od::object obj;
    if (key == "metadata") {
      if (field.value().get_object().get(obj) || !read_meta(obj, meta)) return invalid("ComputeDomain: bad metadata");
    } else if (key == "spec" && !field.value().get_object().get(obj)) {
      od::object channel, rct;
      if (obj.find_field_unordered("channel").get_object().get(channel)) continue;
      for (auto c : channel) {
        std::string_view ck;
        if (c.unescaped_key().get(ck)) break;
        if (ck == "allocationMode" && !c.value().get_string().get(value)) cd.allocation_mode = value;
        if (ck == "resourceClaimTemplate" && !c.value().get_object().get(rct) &&
            !rct.find_field_unordered("name").get_string().get(value)) {
          cd.rct_name = value;
        }
      }
    } else if (key == "status" && !field.value().get_object().get(obj)) {
      if (!obj.find_field_unordered("status").get_string().get(value)) cd.status = value;
    }
  }
  if (meta.name.empty() || meta.uid.empty()) return invalid("ComputeDomain without metadata.name or metadata.uid");
  cd.name = std::move(meta.name);
  cd.ns = std::move(meta.ns);
  cd.uid = std::move(meta.uid);
  cd.resource_version = std::move(meta.resource_version);
  cd.finalizers = std::move(meta.finalizers);
  cd.deleting = meta.deleting;
  return cd;
}

Result<ClaimTemplate> decode_claim_template(std::string_view text) {
  od::parser parser;
  simdjson::padded_string padded(text);
  od::document doc;
  od::object meta_obj;
  if (!well_formed(padded) || parser.iterate(padded).get(doc) ||
      doc.find_field_unordered("metadata").get_object().get(meta_obj)) {
    return invalid("ResourceClaimTemplate has no readable metadata");
  }
  Meta meta;
  if (!read_meta(meta_obj, meta)) return invalid("ResourceClaimTemplate: bad metadata");
  return ClaimTemplate{meta.uid, meta.resource_version, meta.owner_label, meta.finalizers, meta.deleting};
}

std::string render_workload_rct(const ComputeDomain& cd) {
  json::object parameters{{"apiVersion", "resource.nvidia.com/v1beta1"},
                          {"kind", "ComputeDomainChannelConfig"},
                          {"domainID", cd.uid}};
  if (!cd.allocation_mode.empty()) parameters["allocationMode"] = cd.allocation_mode;
  json::object request{{"name", "channel"}, {"exactly", json::object{{"deviceClassName", kDefaultChannelDeviceClass}}}};
  json::object config{{"requests", json::array{"channel"}},
                      {"opaque", json::object{{"driver", kComputeDomainDriver}, {"parameters", std::move(parameters)}}}};
  json::object devices{{"requests", json::array{std::move(request)}}, {"config", json::array{std::move(config)}}};
  json::object metadata{{"namespace", cd.ns},
                        {"name", cd.rct_name},
                        {"finalizers", json::array{kComputeDomainFinalizer}},
                        {"labels", json::object{{kComputeDomainLabel, cd.uid}, {kComputeDomainTargetLabel, "Workload"}}}};
  json::object rct{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaimTemplate"}};
  rct["metadata"] = std::move(metadata);
  rct["spec"] = json::object{{"spec", json::object{{"devices", std::move(devices)}}}};
  return json::serialize(rct);
}

// Boost.JSON parses here only to write the object back whole (fields nvdra does not know are kept).
Result<std::string> with_finalizer(std::string_view object_json, std::string_view finalizer, bool present) {
  std::error_code ec;
  json::value doc = json::parse(object_json, ec);
  if (ec || !doc.is_object() || !doc.as_object()["metadata"].is_object()) return invalid("object without metadata");
  auto& meta = doc.as_object()["metadata"].as_object();
  json::array kept;
  if (auto* list = meta.if_contains("finalizers"); list != nullptr && list->is_array()) {
    for (const auto& f : list->as_array()) {
      if (!(f.is_string() && f.as_string() == finalizer)) kept.push_back(f);
    }
  }
  if (present) kept.emplace_back(finalizer);
  if (kept.empty()) {
    meta.erase("finalizers");
  } else {
    meta["finalizers"] = std::move(kept);
  }
  return json::serialize(doc);
}

Result<std::string> with_status(std::string_view object_json, std::string_view value) {
  std::error_code ec;
  json::value doc = json::parse(object_json, ec);
  if (ec || !doc.is_object()) return invalid("object is not a JSON object");
  auto& status = doc.as_object()["status"];
  if (!status.is_object()) status = json::object{};
  status.as_object()["status"] = value;
  return json::serialize(doc);
}

}  // namespace nvdra::controller
