#include "agent/drivers/driver_managed_steps.hpp"

#include "imex/channel_device.hpp"
#include "imex/prepare_rules.hpp"

namespace nvdra::drivers {

Error with_claim(Error e, const kubelet::ClaimRef& claim) {
  if (e.claim.empty()) e.claim = claim.describe();
  return e;
}

Result<ResolvedDomainClaim> resolve_domain_claim(const k8s::ClaimAllocation& allocation,
                                                 const kubelet::ClaimRef& claim, const claims::ConfigGates& gates) {
  const std::string driver(claims::kComputeDomainDriverName);
  claims::ResolveInput input{driver, {claim.namespace_name, claim.name, claim.uid}, {}, {}, gates};
  for (const auto& d : allocation.devices)
    input.results.push_back({d.request, driver, d.pool, d.device,
                             d.device == imex::kDaemonDevice ? claims::DeviceType::kDaemon
                                                             : claims::DeviceType::kChannel});
  for (const auto& c : allocation.configs)
    input.configs.push_back({c.source == k8s::ConfigSource::kClass ? "FromClass" : "FromClaim", c.requests,
                             claims::OpaqueParameters{driver, c.parameters}});
  ResolvedDomainClaim out;
  out.recorded.uid = claim.uid;
  out.recorded.results = input.results;
  out.recorded.configs = input.configs;
  auto resolution = claims::resolve_configs(input);
  if (!resolution) return resolution.error();
  out.resolution = std::move(*resolution);
  return out;
}

Result<DomainClaimPlan> decide(const k8s::ClaimAllocation& allocation, const kubelet::ClaimRef& claim,
                               const claims::ConfigGates& gates) {
  for (const auto& d : allocation.devices)
    if (d.device != imex::kChannelDevice && d.device != imex::kDaemonDevice)
      return make_error(ErrorCode::kFailedPrecondition, "allocated device \"" + d.device + "\" (request " + d.request +
                                                            ") is not a device of this node; devices here: channel-0, "
                                                            "daemon-0");
  if (auto st = imex::check_result_count(allocation.devices.size()); !st) return st.error();
  DomainClaimPlan plan;
  plan.result = allocation.devices[0];
  const bool daemon = plan.result.device == imex::kDaemonDevice;
  auto resolved = resolve_domain_claim(allocation, claim, gates);
  if (!resolved) return resolved.error();
  plan.recorded = std::move(resolved->recorded);
  const auto* resolution = &resolved->resolution;
  const auto& config = resolution->groups.at(0).config;
  if (const auto* dc = std::get_if<claims::ComputeDomainDaemonConfig>(&config); dc && daemon) {
    plan.kind = DomainDeviceKind::kDaemon;
    plan.domain_id = dc->domain_id;
    return plan;
  }
  if (const auto* cc = std::get_if<claims::ComputeDomainChannelConfig>(&config); cc && !daemon) {
    plan.kind = DomainDeviceKind::kChannel;
    plan.domain_id = cc->domain_id;
    plan.allocation_mode = cc->allocation_mode;
    return plan;
  }
  Error e = make_error(ErrorCode::kInvalidArgument,
                       std::string(claims::kind_name(config)) + " cannot configure device " + plan.result.device +
                           " (allowed: ComputeDomainDaemonConfig for daemon-0, ComputeDomainChannelConfig for "
                           "channel-0)");
  e.field = "status.allocation.devices.config";
  return e;
}

}  // namespace nvdra::drivers
