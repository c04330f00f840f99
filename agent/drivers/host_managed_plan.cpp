#include "agent/drivers/host_managed_plan.hpp"

#include "agent/claims/config/opaque_config.hpp"
#include "agent/drivers/driver_managed_steps.hpp"
#include "imex/channel_device.hpp"
#include "imex/prepare_rules.hpp"

namespace nvdra::drivers {

namespace {

// §7.4 before anything else: a daemon device or config gets the one clear answer; the allocationMode
// allowlist answers for itself, so "All" and "foo" get the same HostManagedIMEX message (the generic
// validator would offer "All" as supported).
Status refuse_daemons_and_modes(const k8s::ClaimAllocation& allocation) {
  for (const auto& d : allocation.devices)
    if (d.device.starts_with("daemon-"))
      return imex::daemon_claim_error("allocated device \"" + d.device + "\" (request " + d.request + ")");
  for (const auto& c : allocation.configs) {
    auto decoded = claims::decode_opaque_config(c.parameters, claims::DecodeMode::kLenient);
    if (decoded && std::holds_alternative<claims::ComputeDomainDaemonConfig>(*decoded))
      return imex::daemon_claim_error("status.allocation.devices.config[" + std::to_string(c.index) +
                                      "] is a ComputeDomainDaemonConfig");
    if (const auto* ch = decoded ? std::get_if<claims::ComputeDomainChannelConfig>(&*decoded) : nullptr)
      if (auto st = imex::check_allocation_mode(ch->allocation_mode); !st) {
        Error e = st.error();
        e.field = "status.allocation.devices.config[" + std::to_string(c.index) + "].opaque.parameters." + e.field;
        return e;
      }
  }
  for (const auto& d : allocation.devices)
    if (d.device != imex::kChannelDevice)
      return make_error(ErrorCode::kFailedPrecondition, "allocated device \"" + d.device + "\" (request " + d.request +
                                                            ") is not a device of this node; devices here: channel-0");
  return {};
}

}  // namespace

Result<HostManagedPlan> plan_host_managed(const k8s::ClaimAllocation& allocation, const kubelet::ClaimRef& claim,
                                          const claims::ConfigGates& gates) {
  if (auto st = refuse_daemons_and_modes(allocation); !st) return st.error();
  // Step 1: decode, normalize and validate the opaque configs (upstream's resolution rules).
  auto resolved = resolve_domain_claim(allocation, claim, gates);
  if (!resolved) return resolved.error();
  // Step 2: exactly one allocation result.
  if (auto st = imex::check_result_count(allocation.devices.size()); !st) return st.error();
  const auto& group = resolved->resolution.groups.at(0);
  const auto* config = std::get_if<claims::ComputeDomainChannelConfig>(&group.config);
  if (!config)
    return make_error(ErrorCode::kInvalidArgument, std::string(claims::kind_name(group.config)) +
                                                       " cannot configure an IMEX channel (want "
                                                       "ComputeDomainChannelConfig)");
  // Step 3: the allowlist (upstream's code treats any value but "All" as Single).
  if (auto st = imex::check_allocation_mode(config->allocation_mode); !st) return st.error();
  return HostManagedPlan{config->domain_id, allocation.devices[0], std::move(resolved->recorded)};
}

}  // namespace nvdra::drivers
