#include "k8s/claim_lookup.hpp"

#include <simdjson.h>

#include <algorithm>
#include <set>

namespace nvdra::k8s {
namespace {


Error claim_error(const ClaimRef& ref, ErrorCode code, std::string field, std::string message) {
  Error e = make_error(code, std::move(message));
  e.claim = ref.describe();
  e.field = std::move(field);
  return e;
}

struct RawConfig {
  std::string source;
  std::vector<std::string> requests;
  bool has_opaque = false;
  std::string driver;
  std::string parameters;
};

struct RawResult {
  std::string request, driver, pool, device, share_id;
  bool admin_access = false;
};

RequestMatch* match_of(const OpaqueConfig& c, const std::string& request, RequestMatch& out) {
  if (c.requests.empty()) return &(out = RequestMatch::kAllRequests);
  const auto base = request.substr(0, request.find('/'));
  for (const auto& r : c.requests) {
    if (r == request) return &(out = RequestMatch::kExact);
  }
  for (const auto& r : c.requests) {
    if (base != request && r == base) return &(out = RequestMatch::kParentRequest);
  }
  return nullptr;
}

}  // namespace

Result<ClaimAllocation> parse_claim_allocation(std::string_view claim_json, const ClaimRef& ref,
                                               const std::string& driver) {
  simdjson::dom::parser parser;  // DOM: the claim is small and read in several places
  simdjson::dom::element root;
  if (parser.parse(claim_json.data(), claim_json.size()).get(root)) {
    return claim_error(ref, ErrorCode::kInvalidArgument, "", "the API server returned a claim that is not JSON");
  }
  std::string_view uid;
  if (root["metadata"]["uid"].get(uid) || uid != ref.uid) {
    return claim_error(ref, ErrorCode::kFailedPrecondition, "metadata.uid",
                       "kubelet asked for uid " + ref.uid + " but the stored claim has uid \"" + std::string(uid) +
                           "\" (the claim was deleted and re-created)");
  }
  simdjson::dom::element alloc;
  if (root["status"]["allocation"].get(alloc)) {
    return claim_error(ref, ErrorCode::kFailedPrecondition, "status.allocation",
                       "the claim is not allocated (status.allocation is missing)");
  }
  ClaimAllocation out;
  out.claim = ref;
  if (std::string_view pod_claim; !root["metadata"]["annotations"][kPodClaimNameAnnotation].get(pod_claim))
    out.pod_claim_name = std::string(pod_claim);
  simdjson::dom::array configs;
  if (!alloc["devices"]["config"].get(configs)) {
    std::size_t i = 0;
    for (auto entry : configs) {
      const std::string field = "status.allocation.devices.config[" + std::to_string(i) + "]";
      std::string_view source;
      if (entry["source"].get(source) || (source != "FromClass" && source != "FromClaim")) {
        return claim_error(ref, ErrorCode::kInvalidArgument, field + ".source",
                           "invalid config source \"" + std::string(source) + "\" (allowed: FromClass, FromClaim)");
      }
      simdjson::dom::element opaque;
      if (entry["opaque"].get(opaque)) {
        return claim_error(ref, ErrorCode::kInvalidArgument, field + ".opaque",
                           "only opaque parameters are supported by this driver (field opaque is missing)");
      }
      std::string_view cfg_driver;
      if (opaque["driver"].get(cfg_driver) || cfg_driver != driver) {
        ++i;
        continue;  // another driver's config: never decoded (upstream does the same)
      }
      simdjson::dom::object params;
      if (opaque["parameters"].get(params)) {
        return claim_error(ref, ErrorCode::kInvalidArgument, field + ".opaque.parameters",
                           "must be a JSON object");
      }
      OpaqueConfig c;
      c.source = source == "FromClass" ? ConfigSource::kClass : ConfigSource::kClaim;
      c.parameters = simdjson::minify(params);
      c.index = i;
      simdjson::dom::array requests;
      if (!entry["requests"].get(requests)) {
        for (auto r : requests) {
          std::string_view name;
          if (r.get(name)) {
            return claim_error(ref, ErrorCode::kInvalidArgument, field + ".requests", "entries must be strings");
          }
          c.requests.emplace_back(name);
        }
      }
      out.configs.push_back(std::move(c));
      ++i;
    }
  }
  // Class configs first, then claim configs, each in list order (upstream getConfigResultsMap).
  std::stable_partition(out.configs.begin(), out.configs.end(),
                        [](const OpaqueConfig& c) { return c.source == ConfigSource::kClass; });
  std::set<std::string_view> other_drivers;
  // kubelet sends a driver only claims with results of its own: preparing nothing would write an
  // empty CDI spec and report success for devices that are not there.
  auto none_for_this_driver = [&] {
    std::string others;
    for (auto d : other_drivers) others += (others.empty() ? "" : ", ") + std::string(d);
    return claim_error(ref, ErrorCode::kInvalidArgument, "status.allocation.devices.results",
                       "no device is allocated by driver " + driver + " (results are for: " +
                           (others.empty() ? std::string("no driver") : others) + ")");
  };
  simdjson::dom::array results;
  if (alloc["devices"]["results"].get(results)) return none_for_this_driver();
  std::size_t i = 0;
  for (auto r : results) {
    const std::string field = "status.allocation.devices.results[" + std::to_string(i++) + "]";
    std::string_view rdriver, request, pool, device, share;
    if (r["driver"].get(rdriver)) {
      return claim_error(ref, ErrorCode::kInvalidArgument, field + ".driver", "is missing");
    }
    if (rdriver != driver) {
      other_drivers.insert(rdriver);
      continue;
    }
    if (r["request"].get(request) || request.empty()) {
      return claim_error(ref, ErrorCode::kInvalidArgument, field + ".request", "is missing");
    }
    if (r["pool"].get(pool) || pool.empty()) {
      return claim_error(ref, ErrorCode::kInvalidArgument, field + ".pool", "is missing");
    }
    if (r["device"].get(device) || device.empty()) {
      return claim_error(ref, ErrorCode::kInvalidArgument, field + ".device", "is missing");
    }
    AllocatedDevice d;
    d.request = request;
    d.base_request = d.request.substr(0, d.request.find('/'));
    d.pool = pool;
    d.device = device;
    if (!r["shareID"].get(share)) d.share_id = share;
    bool admin = false;
    if (!r["adminAccess"].get(admin)) d.admin_access = admin;
    for (std::size_t c = 0; c < out.configs.size(); ++c) {
      RequestMatch m;
      if (match_of(out.configs[c], d.request, m) != nullptr) d.configs.push_back(ConfigMatch{c, m});
    }
    out.devices.push_back(std::move(d));
  }
  if (out.devices.empty()) return none_for_this_driver();
  return out;
}

boost::asio::awaitable<Result<ClaimAllocation>> lookup_claim(ApiServer& api, ClaimRef ref, std::string driver) {
  ObjectKey key;  // a named local: GCC 12 double-destroys braced temporaries passed to coroutines
  key.ns = ref.ns;
  key.name = ref.name;
  auto res = co_await api.get(kResourceClaimsV1, key);
  if (!res) {
    const auto& err = res.error();
    co_return claim_error(ref, err.not_found() ? ErrorCode::kNotFound : ErrorCode::kUnavailable, "",
                          "cannot get the ResourceClaim: " + err.describe());
  }
  co_return parse_claim_allocation(*res, ref, driver);
}

}  // namespace nvdra::k8s
