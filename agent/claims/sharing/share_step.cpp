#include "agent/claims/sharing/share_step.hpp"

#include <algorithm>

#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/claims/sharing/sharing_plan.hpp"

namespace nvdra::claims {

ShareStep::ShareStep(bool enabled, ConfigGates gates, TypeOf type_of)
    : enabled_(enabled), gates_(gates), type_of_(std::move(type_of)) {}

std::vector<std::optional<OpaqueConfig>> ShareStep::configs_of(ClaimAllocation allocation,
                                                               const std::string& uid) const {
  std::vector<std::optional<OpaqueConfig>> out(allocation.results.size());
  for (auto& r : allocation.results)
    if (r.driver == kGpuDriverName)
      if (auto t = type_of_(r.device)) r.type = *t;
  ResolveInput input{std::string(kGpuDriverName), ClaimRef{"", "", uid}, allocation.results, allocation.configs,
                     gates_};
  auto resolution = resolve_configs(input);
  if (!resolution) return out;
  for (std::size_t i = 0; i < resolution->group_of_result.size() && i < out.size(); ++i)
    if (const auto& g = resolution->group_of_result[i]) out[i] = resolution->groups[*g].config;
  return out;
}

Status ShareStep::check(const Checkpoint& checkpoint, const std::string& uid, const ClaimAllocation& mine) const {
  if (!enabled_) return Status{};
  const auto my_configs = configs_of(mine, uid);
  for (const auto& config : my_configs) {
    if (!config) continue;
    auto plan = plan_sharing(*config, {});
    if (plan && plan->kind == SharingKind::kMps)
      return make_error(ErrorCode::kFailedPrecondition, "MPS sharing is not supported when consumable shares is enabled");
  }
  const bool any_held = std::any_of(mine.results.begin(), mine.results.end(), [](const AllocationResult& r) {
    return r.driver == kGpuDriverName && !r.admin_access;
  });
  if (!any_held) return Status{};
  for (const auto& [other_uid, entry] : checkpoint.claims) {
    if (other_uid == uid) continue;
    // Read in place first; the whole status (its configs) only for a claim on one of our devices.
    const auto views = result_views(entry.status);
    const bool overlaps = std::any_of(views.begin(), views.end(), [&](const ResultView& o) {
      return o.driver == kGpuDriverName && !o.admin_access &&
             std::any_of(mine.results.begin(), mine.results.end(), [&](const AllocationResult& r) { return r.device == o.device; });
    });
    if (!overlaps) continue;
    auto other = decode_claim_status(entry.status, other_uid);
    if (!other) continue;  // unreadable: that claim's own prepare/unprepare reports it
    std::optional<std::vector<std::optional<OpaqueConfig>>> other_configs;  // resolved on first overlap
    for (std::size_t i = 0; i < mine.results.size(); ++i) {
      const auto& r = mine.results[i];
      if (r.driver != kGpuDriverName || r.admin_access) continue;
      for (std::size_t j = 0; j < other->results.size(); ++j) {
        const auto& o = other->results[j];
        if (o.driver != kGpuDriverName || o.device != r.device || o.admin_access) continue;
        if (!other_configs) other_configs = configs_of(*other, other_uid);
        if (my_configs[i] != (*other_configs)[j])
          return make_error(ErrorCode::kFailedPrecondition, "requested device " + r.device +
                                                                " has conflicting configuration with already prepared "
                                                                "claim " + other_uid);
      }
    }
  }
  return Status{};
}

std::optional<ShareStep::LiveMig> ShareStep::live_mig(const Checkpoint& checkpoint, const std::string& uid,
                                                      const std::string& device) const {
  if (!enabled_) return std::nullopt;
  for (const auto& [other, entry] : checkpoint.claims) {
    if (other == uid || entry.state != ClaimState::kPrepareCompleted) continue;
    auto groups = decode_prepared_groups(entry.prepared_devices, other);
    if (!groups) continue;
    for (const auto& g : *groups)
      for (const auto& d : g.devices)
        if (d.device == device && d.type == DeviceType::kMig) return LiveMig{d.uuid, d.gi_id, d.ci_id};
  }
  return std::nullopt;
}

}  // namespace nvdra::claims
