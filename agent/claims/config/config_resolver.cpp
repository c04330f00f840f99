#include "agent/claims/config/config_resolver.hpp"

#include <algorithm>

namespace nvdra::claims {
namespace {

struct Candidate {
  OpaqueConfig config;
  ConfigOrigin origin;
  std::optional<std::size_t> index;
  const std::vector<std::string>* requests;  // nullptr for defaults (requests: [])
};

bool is_gpu_driver(const ResolveInput& in) { return in.driver == kGpuDriverName; }

// Whether the config is one of this driver's own kinds. Foreign kinds decode (upstream's scheme
// has all of them) and fail only when they win, with "not a recognized configuration".
bool own_kind(const OpaqueConfig& c, bool gpu_driver) {
  if (gpu_driver)
    return std::holds_alternative<GpuConfig>(c) || std::holds_alternative<MigDeviceConfig>(c) ||
           std::holds_alternative<VfioDeviceConfig>(c);
  return std::holds_alternative<ComputeDomainChannelConfig>(c) || std::holds_alternative<ComputeDomainDaemonConfig>(c);
}

bool fits(const OpaqueConfig& c, DeviceType type) {
  if (std::holds_alternative<GpuConfig>(c)) return type == DeviceType::kGpu;
  if (std::holds_alternative<MigDeviceConfig>(c)) return type == DeviceType::kMig;
  if (std::holds_alternative<VfioDeviceConfig>(c)) return type == DeviceType::kVfio;
  if (std::holds_alternative<ComputeDomainChannelConfig>(c)) return type == DeviceType::kChannel;
  if (std::holds_alternative<ComputeDomainDaemonConfig>(c)) return type == DeviceType::kDaemon;
  return true;  // an unrecognized object never fails the type check (upstream)
}

std::string config_field(const Candidate& c, const std::string& field) {
  if (!c.index) return field;
  std::string out = "status.allocation.devices.config[" + std::to_string(*c.index) + "].opaque.parameters";
  return field.empty() ? out : out + "." + field;
}

Error claim_error(const ResolveInput& in, std::string message, std::string field = {}) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), in.claim.describe(), std::move(field)};
}

Result<std::vector<Candidate>> candidates(const ResolveInput& in) {
  std::vector<Candidate> out;
  // Built-in defaults come first: lowest precedence, they win only when nothing else fits.
  if (is_gpu_driver(in)) {
    out.push_back({GpuConfig{}, ConfigOrigin::kDefault, std::nullopt, nullptr});
    out.push_back({MigDeviceConfig{}, ConfigOrigin::kDefault, std::nullopt, nullptr});
    if (in.gates.passthrough_support) out.push_back({VfioDeviceConfig{}, ConfigOrigin::kDefault, std::nullopt, nullptr});
  } else {
    out.push_back({ComputeDomainDaemonConfig{}, ConfigOrigin::kDefault, std::nullopt, nullptr});
    out.push_back({ComputeDomainChannelConfig{}, ConfigOrigin::kDefault, std::nullopt, nullptr});
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < in.configs.size(); ++i) {
    const auto& src = in.configs[i].source;
    if (src != "FromClass" && src != "FromClaim")
      return claim_error(in, "invalid config source: " + src + " (supported: FromClass, FromClaim)",
                         "status.allocation.devices.config[" + std::to_string(i) + "].source");
    if (src == "FromClass") order.push_back(i);
  }
  for (std::size_t i = 0; i < in.configs.size(); ++i)
    if (in.configs[i].source == "FromClaim") order.push_back(i);
  for (std::size_t i : order) {
    const auto& entry = in.configs[i];
    const std::string field = "status.allocation.devices.config[" + std::to_string(i) + "]";
    if (!entry.opaque) return claim_error(in, "only opaque parameters are supported by this driver", field);
    if (entry.opaque->driver != in.driver) continue;  // another driver's config: never decoded
    auto decoded = decode_opaque_config(entry.opaque->parameters, DecodeMode::kStrict);
    if (!decoded) {
      const auto& e = decoded.error();
      return claim_error(in, "error decoding config parameters: " + e.message,
                         field + ".opaque.parameters" + (e.field.empty() ? "" : "." + e.field));
    }
    out.push_back({std::move(*decoded), entry.source == "FromClass" ? ConfigOrigin::kFromClass : ConfigOrigin::kFromClaim,
                   i, &entry.requests});
  }
  return out;
}

// Walks the candidates from last to first for one result; returns the winner's position.
Result<std::size_t> winner(const ResolveInput& in, const std::vector<Candidate>& cands, const AllocationResult& r) {
  const bool gpu_driver = is_gpu_driver(in);
  for (std::size_t k = cands.size(); k-- > 0;) {
    const auto& c = cands[k];
    const bool request_less = c.requests == nullptr || c.requests->empty();
    // Exact string match: a config naming "<main>" does not match "<main>/<sub>" (upstream quirk).
    if (!request_less && std::find(c.requests->begin(), c.requests->end(), r.request) != c.requests->end()) {
      if (own_kind(c.config, gpu_driver) && !fits(c.config, r.type)) {
        const std::string kind(kind_name(c.config));
        if (gpu_driver)
          return claim_error(in, "cannot apply " + kind + " to device \"" + r.device + "\" of type \"" +
                                     std::string(to_string(r.type)) + "\" (request: " + r.request + ")",
                             config_field(c, "kind"));
        return claim_error(in, "cannot apply " + kind + " to request: " + r.request, config_field(c, "kind"));
      }
      return k;
    }
    if (request_less && fits(c.config, r.type)) return k;
  }
  return claim_error(in, "no configuration applies to device \"" + r.device + "\" of type \"" +
                             std::string(to_string(r.type)) + "\" (request: " + r.request + ")");
}

}  // namespace

std::string_view to_string(DeviceType type) {
  switch (type) {
    case DeviceType::kGpu: return "gpu";
    case DeviceType::kMig: return "mig";
    case DeviceType::kVfio: return "vfio";
    case DeviceType::kChannel: return "channel";
    case DeviceType::kDaemon: return "daemon";
  }
  return "unknown";
}

std::string base_request(const std::string& request) { return request.substr(0, request.find('/')); }

Result<Resolution> resolve_configs(const ResolveInput& in) {
  auto cands = candidates(in);
  if (!cands) return std::move(cands).error();
  Resolution out;
  out.group_of_result.resize(in.results.size());
  std::vector<std::optional<std::size_t>> group_of_candidate(cands->size());
  std::vector<std::size_t> candidate_of_group;
  for (std::size_t i = 0; i < in.results.size(); ++i) {
    const auto& r = in.results[i];
    if (r.driver != in.driver) continue;
    auto k = winner(in, *cands, r);
    if (!k) return std::move(k).error();
    auto& g = group_of_candidate[*k];
    if (!g) {
      g = out.groups.size();
      const auto& c = (*cands)[*k];
      out.groups.push_back(DeviceGroup{c.config, c.origin, c.index, {}});
      candidate_of_group.push_back(*k);
    }
    out.groups[*g].results.push_back(i);
    out.group_of_result[i] = *g;
  }
  std::size_t vfio_groups = 0;
  for (std::size_t g = 0; g < out.groups.size(); ++g) {
    auto& group = out.groups[g];
    const auto& cand = (*cands)[candidate_of_group[g]];
    if (!own_kind(group.config, is_gpu_driver(in)))
      return claim_error(in, "runtime object is not a recognized configuration", config_field(cand, "kind"));
    normalize(group.config, in.gates);
    if (auto s = validate(group.config, in.gates); !s)
      return claim_error(in, "error validating " + std::string(kind_name(group.config)) + ": " + s.error().message,
                         config_field(cand, s.error().field));
    if (std::holds_alternative<VfioDeviceConfig>(group.config)) ++vfio_groups;
  }
  if (in.gates.passthrough_support && vfio_groups > 1)
    return claim_error(in, "claim " + in.claim.ns + "/" + in.claim.name + ":" + in.claim.uid + " contains " +
                               std::to_string(vfio_groups) + " VFIO device groups, but at most one is supported per claim");
  return out;
}

}  // namespace nvdra::claims
