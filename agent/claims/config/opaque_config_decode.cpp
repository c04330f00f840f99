// Strict decoding of opaque configs with simdjson's DOM, which keeps every key of an object in
// order, duplicates included: that is what lets us report duplicate fields the way k8s'
// strict decoder (sigs.k8s.io/json) does. Case-sensitive keys, null = absent, like upstream.
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/utf8.hpp"
#include "agent/claims/config/config_quantity.hpp"
#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::claims {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

const char* json_type(element_type t) {
  switch (t) {
    case element_type::ARRAY: return "array";
    case element_type::OBJECT: return "object";
    case element_type::STRING: return "string";
    case element_type::BOOL: return "bool";
    case element_type::NULL_VALUE: return "null";
    default: return "number";
  }
}

// Collects strict errors (all of them, like k8s) and the first type error (fatal, like Go's json).
class Decoder {
 public:
  Decoder(DecodeMode mode, std::string kind) : mode_(mode), kind_(std::move(kind)) {}

  // Calls on_field(key, value, path) once per accepted field; `known` lists the valid keys.
  template <class F>
  void fields(element el, const std::string& path, std::initializer_list<std::string_view> known, F&& on_field) {
    if (failed()) return;
    object obj;
    if (el.get(obj)) return type_error(el, path, "struct");
    std::set<std::string_view> seen;
    for (auto field : obj) {
      const std::string field_path = join(path, field.key);
      if (std::find(known.begin(), known.end(), field.key) == known.end()) {
        if (mode_ == DecodeMode::kStrict) {
          strict("unknown field \"" + field_path + "\"", field_path);
          allowed_at(path, known);
        }
        continue;
      }
      if (!seen.insert(field.key).second && mode_ == DecodeMode::kStrict) {
        strict("duplicate field \"" + field_path + "\"", field_path);
        continue;
      }
      if (field.value.is_null()) continue;  // null leaves the Go field at its zero value
      on_field(field.key, field.value, field_path);
      if (failed()) return;
    }
  }

  std::string string(element el, const std::string& path) {
    std::string_view s;
    if (el.get(s)) {
      type_error(el, path, "string");
      return {};
    }
    return std::string(s);
  }

  bool boolean(element el, const std::string& path) {
    bool b = false;
    if (el.get(b)) type_error(el, path, "bool");
    return b;
  }

  int64_t integer(element el, const std::string& path) {
    int64_t v = 0;
    if (el.type() != element_type::INT64 || el.get(v)) type_error(el, path, "int");
    return v;
  }

  double number(element el, const std::string& path) {
    double v = 0;
    if (el.get(v)) type_error(el, path, "float64");  // simdjson converts integers too
    return v;
  }

  // A k8s resource.Quantity: a JSON string, or a number (Go accepts both). Parsed later.
  std::string quantity(element el, const std::string& path) {
    std::string text = raw_quantity(el, path);
    if (failed()) return {};
    if (auto q = parse_quantity(text); !q) {
      // Go returns Quantity.UnmarshalJSON's error unwrapped.
      fatal_ = Error{ErrorCode::kInvalidArgument, q.error().message + " at " + path, {}, path};
      return {};
    }
    return text;
  }

  std::string raw_quantity(element el, const std::string& path) {
    if (el.type() == element_type::STRING) return string(el, path);
    int64_t i;
    uint64_t u;
    double d;
    if (!el.get(i)) return std::to_string(i);
    if (!el.get(u)) return std::to_string(u);
    if (!el.get(d)) {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, r.ptr);
    }
    type_error(el, path, "resource.Quantity");
    return {};
  }

  void type_error(element el, const std::string& path, std::string_view go_type) {
    if (fatal_) return;
    // Go's wording: json: cannot unmarshal string into Go struct field GpuConfig.sharing.strategy of type …
    fatal_ = Error{ErrorCode::kInvalidArgument,
                   "json: cannot unmarshal " + std::string(json_type(el.type())) + " into Go struct field " + kind_ +
                       "." + path + " of type " + std::string(go_type),
                   {}, path};
  }

  bool failed() const { return fatal_.has_value(); }

  Status status() const {
    if (fatal_) return *fatal_;
    if (strict_.empty()) return {};
    // k8s runtime.NewStrictDecodingError: all problems, comma-separated.
    std::string msg = "strict decoding error: ";
    for (std::size_t i = 0; i < strict_.size(); ++i) msg += (i ? ", " : "") + strict_[i];
    // nvdra's addition after upstream's words: what each object with an unknown field takes.
    for (const auto& [where, fields] : allowed_)
      msg += "; allowed fields" + (where.empty() ? std::string() : " of " + where) + ": " + fields;
    return Error{ErrorCode::kInvalidArgument, std::move(msg), {}, first_strict_field_};
  }

 private:
  void strict(std::string message, const std::string& path) {
    if (strict_.empty()) first_strict_field_ = path;
    strict_.push_back(std::move(message));
  }

  // The fields an object takes, once per object path that had an unknown field (in order of finding).
  void allowed_at(const std::string& path, std::initializer_list<std::string_view> known) {
    for (const auto& entry : allowed_)
      if (entry.first == path) return;
    std::string fields;
    for (auto f : known) fields += (fields.empty() ? "" : ", ") + std::string(f);
    allowed_.emplace_back(path, std::move(fields));
  }

  DecodeMode mode_;
  std::string kind_;
  std::vector<std::pair<std::string, std::string>> allowed_;
  std::vector<std::string> strict_;
  std::string first_strict_field_;
  std::optional<Error> fatal_;
};

MpsConfig decode_mps(Decoder& d, element el, const std::string& path) {
  MpsConfig out;
  d.fields(el, path,
           {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit", "defaultPerDevicePinnedMemoryLimit",
            "multiUser"},
           [&](std::string_view key, element v, const std::string& p) {
             if (key == "defaultActiveThreadPercentage") out.default_active_thread_percentage = d.integer(v, p);
             if (key == "defaultPinnedDeviceMemoryLimit") out.default_pinned_device_memory_limit = d.quantity(v, p);
             if (key == "multiUser") out.multi_user = d.boolean(v, p);
             if (key == "defaultPerDevicePinnedMemoryLimit") {
               object m;
               if (v.get(m)) return d.type_error(v, p, "map[string]resource.Quantity");
               for (auto entry : m) {
                 const std::string ep = p + "." + std::string(entry.key);
                 if (entry.value.is_null()) continue;
                 out.default_per_device_pinned_memory_limit[std::string(entry.key)] = d.quantity(entry.value, ep);
               }
             }
           });
  return out;
}

TimeSlicingConfig decode_time_slicing(Decoder& d, element el, const std::string& path) {
  TimeSlicingConfig out;
  d.fields(el, path, {"interval"}, [&](std::string_view, element v, const std::string& p) {
    out.interval = d.string(v, p);
  });
  return out;
}

FabricTopologyConfig decode_fabric(Decoder& d, element el, const std::string& path) {
  FabricTopologyConfig out;
  d.fields(el, path,
           {"strategy", "partitionSize", "virtualizationModel", "minBandwidth", "maxLatency", "partitionIDs"},
           [&](std::string_view key, element v, const std::string& p) {
             if (key == "strategy") out.strategy = d.string(v, p);
             if (key == "partitionSize") out.partition_size = d.integer(v, p);
             if (key == "virtualizationModel") out.virtualization_model = d.string(v, p);
             if (key == "minBandwidth") out.min_bandwidth = d.number(v, p);
             if (key == "maxLatency") out.max_latency = d.number(v, p);
             if (key == "partitionIDs") {
               simdjson::dom::array a;
               if (v.get(a)) return d.type_error(v, p, "[]string");
               std::size_t i = 0;
               for (auto item : a) out.partition_ids.push_back(d.string(item, p + "[" + std::to_string(i++) + "]"));
             }
           });
  return out;
}

GpuConfig decode_gpu(Decoder& d, element root) {
  GpuConfig out;
  d.fields(root, "", {"apiVersion", "kind", "sharing", "fabricTopologyConfig"},
           [&](std::string_view key, element v, const std::string& p) {
             if (key == "fabricTopologyConfig") out.fabric_topology_config = decode_fabric(d, v, p);
             if (key != "sharing") return;
             GpuSharing s;
             d.fields(v, p, {"strategy", "timeSlicingConfig", "mpsConfig"},
                      [&](std::string_view k, element sv, const std::string& sp) {
                        if (k == "strategy") s.strategy = d.string(sv, sp);
                        if (k == "timeSlicingConfig") s.time_slicing_config = decode_time_slicing(d, sv, sp);
                        if (k == "mpsConfig") s.mps_config = decode_mps(d, sv, sp);
                      });
             out.sharing = std::move(s);
           });
  return out;
}

MigDeviceConfig decode_mig(Decoder& d, element root) {
  MigDeviceConfig out;
  d.fields(root, "", {"apiVersion", "kind", "sharing"}, [&](std::string_view key, element v, const std::string& p) {
    if (key != "sharing") return;
    MigSharing s;
    d.fields(v, p, {"strategy", "mpsConfig"}, [&](std::string_view k, element sv, const std::string& sp) {
      if (k == "strategy") s.strategy = d.string(sv, sp);
      if (k == "mpsConfig") s.mps_config = decode_mps(d, sv, sp);
    });
    out.sharing = std::move(s);
  });
  return out;
}

VfioDeviceConfig decode_vfio(Decoder& d, element root) {
  VfioDeviceConfig out;
  d.fields(root, "", {"apiVersion", "kind", "iommu"}, [&](std::string_view key, element v, const std::string& p) {
    if (key != "iommu") return;
    IommuConfig iommu;
    d.fields(v, p, {"backendPolicy", "enableAPIDevice"}, [&](std::string_view k, element iv, const std::string& ip) {
      if (k == "backendPolicy") iommu.backend_policy = d.string(iv, ip);
      if (k == "enableAPIDevice") iommu.enable_api_device = d.boolean(iv, ip);
    });
    out.iommu = std::move(iommu);
  });
  return out;
}

ComputeDomainChannelConfig decode_channel(Decoder& d, element root) {
  ComputeDomainChannelConfig out;
  d.fields(root, "", {"apiVersion", "kind", "domainID", "allocationMode"},
           [&](std::string_view key, element v, const std::string& p) {
             if (key == "domainID") out.domain_id = d.string(v, p);
             if (key == "allocationMode") out.allocation_mode = d.string(v, p);
           });
  return out;
}

ComputeDomainDaemonConfig decode_daemon(Decoder& d, element root) {
  ComputeDomainDaemonConfig out;
  d.fields(root, "", {"apiVersion", "kind", "domainID"}, [&](std::string_view key, element v, const std::string& p) {
    if (key == "domainID") out.domain_id = d.string(v, p);
  });
  return out;
}

Error invalid(std::string message, std::string field = {}) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}, std::move(field)};
}

// apimachinery quotes the whole input in its "missing" errors; keep operators' logs bounded. The cut
// keeps whole characters: the message goes into JSON (AdmissionReview, Events), which must stay UTF-8.
std::string quoted_input(std::string_view json) {
  constexpr std::size_t kMax = 256;
  return json.size() <= kMax ? std::string(json) : truncate_utf8(std::string(json), kMax) + "…";
}

// Like apimachinery's json meta interpreter: apiVersion and kind are read leniently from the top level.
Result<std::string> type_meta(object root, std::string_view key) {
  std::string out;
  for (auto field : root) {
    if (field.key != key || field.value.is_null()) continue;
    std::string_view s;
    if (field.value.get(s))
      return invalid("couldn't get version/kind; json parse error: json: cannot unmarshal " +
                         std::string(json_type(field.value.type())) + " into Go struct field .`" + std::string(key) +
                         "` of type string",
                     std::string(key));
    out = std::string(s);
  }
  return out;
}

constexpr std::string_view kRegisteredKinds =
    "GpuConfig, MigDeviceConfig, VfioDeviceConfig, ComputeDomainChannelConfig, ComputeDomainDaemonConfig, "
    "ComputeDomain, ComputeDomainClique";

bool registered(std::string_view kind) {
  constexpr std::string_view kKinds[] = {"GpuConfig", "MigDeviceConfig", "VfioDeviceConfig",
                                         "ComputeDomainChannelConfig", "ComputeDomainDaemonConfig",
                                         "ComputeDomain", "ComputeDomainClique"};
  return std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds);
}

}  // namespace

std::string_view kind_name(const OpaqueConfig& config) {
  struct Name {
    std::string_view operator()(const GpuConfig&) const { return "GpuConfig"; }
    std::string_view operator()(const MigDeviceConfig&) const { return "MigDeviceConfig"; }
    std::string_view operator()(const VfioDeviceConfig&) const { return "VfioDeviceConfig"; }
    std::string_view operator()(const ComputeDomainChannelConfig&) const { return "ComputeDomainChannelConfig"; }
    std::string_view operator()(const ComputeDomainDaemonConfig&) const { return "ComputeDomainDaemonConfig"; }
    std::string_view operator()(const UnrecognizedObject& o) const { return o.kind; }
  };
  return std::visit(Name{}, config);
}

Result<OpaqueConfig> decode_opaque_config(std::string_view json, DecodeMode mode) {
  if (json.size() > kMaxOpaqueConfigBytes)
    return invalid("config parameters are " + std::to_string(json.size()) + " bytes, more than the " +
                   std::to_string(kMaxOpaqueConfigBytes) + " accepted");
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(json.data(), json.size()).get(root))
    return invalid(std::string("couldn't get version/kind; json parse error: ") + simdjson::error_message(err));
  object obj;
  if (root.get(obj))
    return invalid("couldn't get version/kind; json parse error: json: cannot unmarshal " +
                   std::string(json_type(root.type())) + " into Go value of type struct { APIVersion string; Kind string }");
  auto api_version = type_meta(obj, "apiVersion");
  if (!api_version) return std::move(api_version).error();
  auto kind = type_meta(obj, "kind");
  if (!kind) return std::move(kind).error();
  if (kind->empty()) return invalid("Object 'Kind' is missing in '" + quoted_input(json) + "'", "kind");
  if (api_version->empty()) return invalid("Object 'apiVersion' is missing in '" + quoted_input(json) + "'", "apiVersion");
  if (*api_version != kConfigApiVersion || !registered(*kind)) {
    return invalid("no kind \"" + *kind + "\" is registered for version \"" + *api_version +
                       "\" (registered for \"" + std::string(kConfigApiVersion) + "\": " + std::string(kRegisteredKinds) +
                       ")",
                   *api_version != kConfigApiVersion ? "apiVersion" : "kind");
  }
  Decoder d(mode, *kind);
  OpaqueConfig out;
  if (*kind == "GpuConfig") out = decode_gpu(d, root);
  else if (*kind == "MigDeviceConfig") out = decode_mig(d, root);
  else if (*kind == "VfioDeviceConfig") out = decode_vfio(d, root);
  else if (*kind == "ComputeDomainChannelConfig") out = decode_channel(d, root);
  else if (*kind == "ComputeDomainDaemonConfig") out = decode_daemon(d, root);
  else out = UnrecognizedObject{*kind};  // ComputeDomain(Clique): its body is not a device config
  if (auto s = d.status(); !s) return s.error();
  return out;
}

}  // namespace nvdra::claims
