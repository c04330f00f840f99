#include "agent/claims/claim/prepared_claim.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace nvdra::claims {
namespace json = boost::json;

namespace {

json::array strings(const std::vector<std::string>& values) {
  json::array out;
  for (const auto& v : values) out.emplace_back(v);
  return out;
}

Error bad(const std::string& claim, const std::string& what) {
  Error e = make_error(ErrorCode::kFailedPrecondition, "checkpointed claim has an unexpected shape: " + what);
  e.claim = claim;
  return e;
}

const json::value* member(const json::value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  return v.as_object().if_contains(key);
}

std::string string_of(const json::value* v) { return v && v->is_string() ? std::string(v->as_string()) : std::string(); }

unsigned unsigned_of(const json::value* v) {
  if (!v) return 0;
  if (v->is_uint64()) return static_cast<unsigned>(v->as_uint64());
  if (v->is_int64()) return static_cast<unsigned>(v->as_int64());
  return 0;
}

std::vector<std::string> strings_of(const json::value* v) {
  std::vector<std::string> out;
  if (v && v->is_array())
    for (const auto& s : v->as_array())
      if (s.is_string()) out.emplace_back(s.as_string());
  return out;
}

}  // namespace

json::array encode_prepared_groups(const std::vector<PreparedGroup>& groups) {
  json::array out;
  for (const auto& g : groups) {
    json::array devices;
    for (const auto& d : g.devices) {
      json::object device{{"Requests", strings(d.requests)}, {"PoolName", d.pool}, {"DeviceName", d.device},
                          {"CDIDeviceIDs", strings(d.cdi_device_ids)}};
      // Go's omitempty fields of CheckpointedDevice, in its field order.
      if (!d.share_id.empty()) device["ShareID"] = d.share_id;
      if (!d.metadata.empty()) device["Metadata"] = d.metadata;
      json::object entry;
      if (d.type == DeviceType::kMig) {
        entry["gpu"] = nullptr;
        entry["mig"] = json::object{{"concrete", json::object{{"parentMinor", d.parent_minor}, {"giId", d.gi_id},
                                                              {"ciId", d.ci_id}, {"migUUID", d.uuid},
                                                              {"parentUUID", d.parent_uuid}}},
                                    {"device", device}};
      } else if (d.type == DeviceType::kVfio) {
        entry["gpu"] = nullptr;
        entry["mig"] = nullptr;
        entry["vfio"] = json::object{{"info", json::object{{"uuid", d.uuid}, {"pciBusID", d.pci_bus_id}}},
                                     {"device", device}};
      } else {
        entry["gpu"] = json::object{{"info", json::object{{"uuid", d.uuid}}}, {"device", device}};
        entry["mig"] = nullptr;
      }
      devices.emplace_back(std::move(entry));
    }
    json::object state;
    if (!g.mps_daemon_id.empty()) state["mpsControlDaemonID"] = g.mps_daemon_id;
    if (g.time_slice_applied) state["timeSliceApplied"] = true;
    out.emplace_back(json::object{{"devices", std::move(devices)}, {"configState", std::move(state)}});
  }
  return out;
}

Result<std::vector<PreparedGroup>> decode_prepared_groups(const json::array& groups, const std::string& claim) {
  std::vector<PreparedGroup> out;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto* devices = member(groups[i], "devices");
    if (!devices || !devices->is_array()) return bad(claim, "preparedDevices[" + std::to_string(i) + "].devices is not a list");
    PreparedGroup group;
    const auto* state = member(groups[i], "configState");
    group.mps_daemon_id = string_of(state ? member(*state, "mpsControlDaemonID") : nullptr);
    const auto* ts = state ? member(*state, "timeSliceApplied") : nullptr;
    group.time_slice_applied = ts && ts->is_bool() && ts->as_bool();
    for (const auto& d : devices->as_array()) {
      PreparedEntry e;
      const json::value* device = nullptr;
      const auto* gpu = member(d, "gpu");
      const auto* mig = member(d, "mig");
      if (gpu && gpu->is_object()) {
        e.type = DeviceType::kGpu;
        const auto* info = member(*gpu, "info");
        e.uuid = string_of(info ? member(*info, "uuid") : nullptr);
        device = member(*gpu, "device");
      } else if (mig && mig->is_object()) {
        e.type = DeviceType::kMig;
        const auto* c = member(*mig, "concrete");
        if (c) {
          e.parent_minor = unsigned_of(member(*c, "parentMinor"));
          e.gi_id = unsigned_of(member(*c, "giId"));
          e.ci_id = unsigned_of(member(*c, "ciId"));
          e.uuid = string_of(member(*c, "migUUID"));
          e.parent_uuid = string_of(member(*c, "parentUUID"));
        }
        device = member(*mig, "device");
      } else if (const auto* vfio = member(d, "vfio"); vfio && vfio->is_object()) {
        e.type = DeviceType::kVfio;
        const auto* info = member(*vfio, "info");
        e.uuid = string_of(info ? member(*info, "uuid") : nullptr);
        e.pci_bus_id = string_of(info ? member(*info, "pciBusID") : nullptr);
        device = member(*vfio, "device");
      }
      if (!device || !device->is_object())
        return bad(claim, "preparedDevices[" + std::to_string(i) + "] holds a device that is neither gpu, mig nor vfio");
      e.requests = strings_of(member(*device, "Requests"));
      e.pool = string_of(member(*device, "PoolName"));
      e.device = string_of(member(*device, "DeviceName"));
      e.cdi_device_ids = strings_of(member(*device, "CDIDeviceIDs"));
      e.share_id = string_of(member(*device, "ShareID"));
      if (const auto* m = member(*device, "Metadata"); m && m->is_object()) e.metadata = m->as_object();
      group.devices.push_back(std::move(e));
    }
    out.push_back(std::move(group));
  }
  return out;
}

std::vector<kubelet::PreparedDevice> to_prepared_devices(const std::vector<PreparedGroup>& groups) {
  std::vector<kubelet::PreparedDevice> out;
  for (const auto& g : groups)
    for (const auto& d : g.devices) {
      kubelet::PreparedDevice p;
      for (const auto& r : d.requests) p.request_names.push_back(base_request(r));
      p.pool_name = d.pool;
      p.device_name = d.device;
      p.cdi_device_ids = d.cdi_device_ids;
      if (!d.share_id.empty()) p.share_id = d.share_id;
      out.push_back(std::move(p));
    }
  return out;
}

json::value encode_claim_status(const ClaimAllocation& allocation) {
  json::array results;
  for (const auto& r : allocation.results) {
    json::object result{{"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}};
    // Kept in the checkpoint (as upstream's ResourceClaimStatus copy) for the exclusivity check.
    if (r.admin_access) result["adminAccess"] = true;
    if (!r.share_id.empty()) result["shareID"] = r.share_id;
    results.emplace_back(std::move(result));
  }
  json::array configs;
  for (const auto& c : allocation.configs) {
    json::object entry{{"source", c.source}};
    if (!c.requests.empty()) entry["requests"] = strings(c.requests);
    if (c.opaque) {
      // Parameters are kept as the JSON they are (Go's RawExtension); invalid bytes stay a string
      // so the resolver reports them again on rollback.
      boost::system::error_code ec;
      json::value params = json::parse(c.opaque->parameters, ec);
      if (ec) params = json::string(c.opaque->parameters);
      entry["opaque"] = json::object{{"driver", c.opaque->driver}, {"parameters", std::move(params)}};
    }
    configs.emplace_back(std::move(entry));
  }
  json::object devices{{"results", std::move(results)}};
  if (!configs.empty()) devices["config"] = std::move(configs);
  return json::object{{"allocation", json::object{{"devices", std::move(devices)}}}};
}

namespace {
std::string_view view_of(const json::value* v) { return v && v->is_string() ? std::string_view(v->as_string()) : std::string_view(); }
}  // namespace

std::vector<ResultView> result_views(const json::value& status) {
  std::vector<ResultView> out;
  const auto* allocation = member(status, "allocation");
  const auto* devices = allocation ? member(*allocation, "devices") : nullptr;
  const auto* results = devices ? member(*devices, "results") : nullptr;
  if (!results || !results->is_array()) return out;
  out.reserve(results->as_array().size());
  for (const auto& r : results->as_array()) {
    const auto* admin = member(r, "adminAccess");
    out.push_back(ResultView{view_of(member(r, "driver")), view_of(member(r, "device")), view_of(member(r, "shareID")),
                             admin && admin->is_bool() && admin->as_bool()});
  }
  return out;
}

Result<ClaimAllocation> decode_claim_status(const json::value& status, const std::string& uid) {
  ClaimAllocation out;
  out.uid = uid;
  const auto* allocation = member(status, "allocation");
  const auto* devices = allocation ? member(*allocation, "devices") : nullptr;
  if (!devices) return out;  // nothing allocated: nothing to undo
  if (const auto* results = member(*devices, "results"); results && results->is_array())
    for (const auto& r : results->as_array()) {
      AllocationResult result{string_of(member(r, "request")), string_of(member(r, "driver")),
                              string_of(member(r, "pool")), string_of(member(r, "device"))};
      const auto* admin = member(r, "adminAccess");
      result.admin_access = admin && admin->is_bool() && admin->as_bool();
      result.share_id = string_of(member(r, "shareID"));
      out.results.push_back(std::move(result));
    }
  if (const auto* configs = member(*devices, "config"); configs && configs->is_array())
    for (const auto& c : configs->as_array()) {
      ConfigEntry entry{string_of(member(c, "source")), strings_of(member(c, "requests")), std::nullopt};
      if (const auto* opaque = member(c, "opaque"); opaque && opaque->is_object()) {
        const auto* params = member(*opaque, "parameters");
        std::string raw = !params ? "" : params->is_string() ? std::string(params->as_string()) : json::serialize(*params);
        entry.opaque = OpaqueParameters{string_of(member(*opaque, "driver")), std::move(raw)};
      }
      out.configs.push_back(std::move(entry));
    }
  return out;
}

Status entry_readable(const std::string& uid, const CheckpointedClaim& entry) {
  // A started entry's status decodes leniently (what cannot be read plans nothing); a completed
  // entry's devices must decode, or nothing says which devices it holds.
  if (entry.state != ClaimState::kPrepareCompleted) return {};
  const kubelet::ClaimRef claim{entry.ns, entry.name, uid};
  auto groups = decode_prepared_groups(entry.prepared_devices, claim.describe());
  if (!groups) return groups.error();
  return {};
}

}  // namespace nvdra::claims
