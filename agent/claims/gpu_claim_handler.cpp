#include "agent/claims/gpu_claim_handler.hpp"

#include <algorithm>
#include <set>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/base/step_clock.hpp"
#include "agent/claims/claim/device_exclusivity.hpp"
#include "agent/claims/gpu_claim_support.hpp"
#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::claims {

using namespace handler_detail;

namespace {

// Types the claim's gpu.nvidia.com results by the inventory; refuses a device this node has not, or
// cannot prepare (DynamicMIG without NVML, VFIO without PassthroughSupport).
Status type_results(ClaimAllocation& allocation, const kubelet::ClaimRef& claim, const GpuInventory& inventory,
                    bool dynamic_mig, bool vfio) {
  for (auto& r : allocation.results) {
    if (r.driver != kGpuDriverName) continue;
    const auto* device = inventory.find(r.device);
    if (!device) {
      std::string known;
      for (const auto& n : inventory.names()) known += (known.empty() ? "" : ", ") + n;
      return claim_error(ErrorCode::kFailedPrecondition,
                         "allocated device \"" + r.device + "\" (request " + r.request +
                             ") is not a device of this node; devices here: " + known,
                         claim);
    }
    if (device->dynamic && !dynamic_mig)
      return claim_error(ErrorCode::kFailedPrecondition,
                         "allocated device \"" + r.device + "\" is a DynamicMIG device, but this agent has no NVML "
                         "library to create MIG devices with",
                         claim);
    if (device->type == DeviceType::kVfio && !vfio)
      return claim_error(ErrorCode::kFailedPrecondition,
                         "allocated device \"" + r.device + "\" is a VFIO device, but PassthroughSupport is off", claim);
    r.type = device->type;
  }
  return {};
}

}  // namespace

boost::asio::awaitable<Result<bool>> claim_exists(ClaimSource& source, kubelet::ClaimRef claim) {
  auto got = co_await source.get(claim);
  if (got) co_return got->uid == claim.uid;
  if (got.error().code == ErrorCode::kNotFound) co_return false;
  co_return got.error();
}

GpuClaimHandler::GpuClaimHandler(runtime::WorkerPool& pool, ClaimSource& source, const GpuInventory& inventory,
                                 CheckpointCommitter& committer, cdi::SpecStore& specs, MpsControl& mps,
                                 GpuClaimHandlerOptions options)
    : pool_(pool), source_(source), inventory_(inventory), committer_(committer), specs_(specs), mps_(mps),
      options_(std::move(options)), smi_(options_.driver_root),
      shares_(options_.consumable_shares, options_.gates, [this](const std::string& device) -> std::optional<DeviceType> {
        const auto* d = inventory_.find(device);
        return d ? std::optional<DeviceType>(d->type) : std::nullopt;
      }) {
  common_edits_ = std::make_shared<const cdi::ContainerEdits>(options_.common_edits);
  if (options_.mig_library) dynamic_mig_ = std::make_unique<DynamicMig>(
        pool_, *options_.mig_library, options_.metrics ? *options_.metrics : metrics::null_sink());
  if (options_.pci) vfio_ = std::make_unique<VfioStep>(pool_, *options_.pci, options_.vfio);
  services_.reset(new GpuServices{pool_, inventory_, committer_, specs_, mps_, smi_, shares_, dynamic_mig_.get(),
                                  vfio_.get(), options_.fabric, options_.node_name, options_.mps_root, options_.host,
                                  common_edits_, options_.on_spec_rewritten, gpu_edits_});
}

Result<std::vector<PlannedGroup>> GpuClaimHandler::plan_claim(ClaimAllocation& allocation,
                                                                               const kubelet::ClaimRef& claim) const {
  ResolveInput input{std::string(kGpuDriverName), ClaimRef{claim.namespace_name, claim.name, claim.uid}, {}, {},
                     options_.gates};
  if (auto st = type_results(allocation, claim, inventory_, dynamic_mig_ != nullptr, vfio_ != nullptr); !st)
    return st.error();
  input.results = allocation.results;
  input.configs = allocation.configs;
  auto resolution = resolve_configs(input);
  if (!resolution) return for_claim(resolution.error(), claim);

  std::vector<PlannedGroup> groups(resolution->groups.size());
  for (std::size_t i = 0; i < resolution->group_of_result.size(); ++i) {
    const auto& g = resolution->group_of_result[i];
    if (!g) continue;
    const auto* device = inventory_.find(allocation.results[i].device);
    groups[*g].devices.push_back(device);
    groups[*g].results.push_back(i);
    if (const auto* gc = std::get_if<GpuConfig>(&resolution->groups[*g].config)) groups[*g].fabric = gc->fabric_topology_config;
    groups[*g].uuids.push_back(device->uuid);
    if (device->type == DeviceType::kGpu) groups[*g].gpu_uuids.push_back(device->uuid);
    if (device->type == DeviceType::kGpu) groups[*g].fabric_gpus.push_back(device->uuid);
    if (device->type == DeviceType::kVfio) {
      const auto* gpu = device->twin.empty() ? nullptr : inventory_.find(device->twin);
      groups[*g].fabric_gpus.push_back(gpu ? gpu->uuid : device->name);
    }
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto& group = groups[i];
    std::sort(group.uuids.begin(), group.uuids.end());
    std::sort(group.gpu_uuids.begin(), group.gpu_uuids.end());
    auto plan = plan_sharing(resolution->groups[i].config, group.uuids);
    if (!plan) return for_claim(plan.error(), claim);
    group.plan = std::move(*plan);
    if (const auto* v = std::get_if<VfioDeviceConfig>(&resolution->groups[i].config)) group.vfio = *v;
  }
  return groups;
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> GpuClaimHandler::prepare(kubelet::ClaimRef claim) {
  const auto& claims = committer_.current().claims;
  if (auto it = claims.find(claim.uid); it != claims.end()) {
    if (it->second.state == ClaimState::kPrepareCompleted) {
      const CheckpointedClaim entry = it->second;  // a copy: the map may change while we are suspended
      auto groups = decode_prepared_groups(entry.prepared_devices, claim.describe());
      if (!groups) co_return groups.error();
      // The answer stands, but only with its CDI spec on disk: one damaged since is written again.
      if (auto spec = co_await ensure_claim_spec(*services_, claim, entry); !spec) co_return spec.error();
      co_return to_prepared_devices(*groups);
    }
    // A prepare that stopped half-way (error, cancellation, crash): undo it, then start afresh.
    auto undo = undo_groups(claim.uid, it->second);
    if (!undo) co_return undo.error();
    if (auto st = co_await undo_claim(claim, std::move(*undo)); !st) co_return st.error();
  }
  co_return co_await prepare_new(std::move(claim));
}

// The pipeline: look up, plan every step, PrepareStarted, apply the steps (steps/gpu_step_list.cpp)
// in order, PrepareCompleted. A failed step rolls the claim back at once (prepare_hooks), so the
// node keeps no half-prepared claim; if the rollback fails too, the PrepareStarted entry keeps it
// findable (the results name the MIG devices to look for, by placement).
boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> GpuClaimHandler::prepare_new(
    kubelet::ClaimRef claim) {
  StepClock clock;
  auto allocation = co_await source_.get(claim);
  clock.step("lookup");
  if (!allocation) co_return for_claim(allocation.error(), claim);
  if (allocation->uid != claim.uid)
    co_return claim_error(ErrorCode::kFailedPrecondition,
                          "claim " + claim.namespace_name + "/" + claim.name + ": UID mismatch: kubelet has " +
                              claim.uid + ", the API has " + allocation->uid,
                          claim);
  auto groups = plan_claim(*allocation, claim);
  if (!groups) co_return groups.error();
  // No suspension between these checks and the PrepareStarted commit: see device_exclusivity.hpp.
  if (auto free = check_free(claim, *allocation); !free) co_return free.error();
  GpuPrepare prepare{*services_, claim, area_of(*groups)};
  prepare.allocation = &*allocation, prepare.groups = &*groups;
  prepare.daemons.resize(groups->size()), prepare.prepared.resize(groups->size());
  CheckpointedClaim entry{ClaimState::kPrepareStarted, encode_claim_status(*allocation), {}, claim.name,
                          claim.namespace_name, {}};
  const auto hooks = prepare_hooks(claim, entry, clock);
  if (auto st = co_await steps::run_pipeline(gpu_prepare_steps(), prepare, hooks); !st)
    co_return for_claim(st.error(), claim);
  if (options_.on_devices_changed) options_.on_devices_changed();
  // describe() formats strings: only when the line will be written, not on every prepare.
  if (auto log = nvdra::logger("claims"); log->should_log(spdlog::level::debug))
    log->debug("claim {}/{} prepared in {}", claim.namespace_name, claim.name, clock.describe());
  co_return to_prepared_devices(prepare.prepared);
}

Status GpuClaimHandler::check_free(const kubelet::ClaimRef& claim, const ClaimAllocation& allocation) const {
  if (auto free = check_device_exclusivity(committer_.current(), claim.uid, allocation.results, kGpuDriverName); !free)
    return for_claim(free.error(), claim);
  if (auto shared = shares_.check(committer_.current(), claim.uid, allocation); !shared)
    return for_claim(shared.error(), claim);
  return {};
}

std::string_view GpuClaimHandler::area_of(const std::vector<PlannedGroup>& groups) const {
  ClaimKind kind;
  for (const auto& g : groups) {
    kind.mps |= g.plan.kind == SharingKind::kMps;
    kind.time_sliced |= g.plan.kind == SharingKind::kTimeSlicing && !g.gpu_uuids.empty();
    for (const auto* d : g.devices) kind.dynamic_mig |= d->dynamic, kind.mig |= d->type == DeviceType::kMig;
    kind.vfio |= g.vfio.has_value();
  }
  return kind.area(mps_);
}

steps::PipelineHooks<GpuPrepare> GpuClaimHandler::prepare_hooks(const kubelet::ClaimRef& claim,
                                                                 CheckpointedClaim& entry, StepClock& clock) {
  steps::PipelineHooks<GpuPrepare> hooks;
  // The FM partitions are held from their plan on, without a suspension, until PrepareStarted is durable.
  // A claim whose steps leave nothing that start-up needs its entry for (a plain GPU or MIG device:
  // its CDI spec alone, which start-up removes when no entry names it) keeps PrepareStarted in memory.
  hooks.started = [this, &entry, &clock](GpuPrepare& p, bool durable) -> boost::asio::awaitable<Status> {
    const std::string_view area = p.area;
    if (!durable) {
      committer_.stage(p.claim.uid, entry);
    } else {
      if (options_.fabric) options_.fabric->hold(p.claim.uid, p.fabric);
      if (auto st = co_await committer_.commit_one(p.claim.uid, entry); !st) {
        if (options_.fabric) options_.fabric->forget(p.claim.uid);
        co_return st;
      }
    }
    crash_point(area, "prepare.after-started");
    clock.step("started");
    co_return Status{};
  };
  hooks.completed = [this, &entry, &clock](GpuPrepare& p) -> boost::asio::awaitable<Status> {
    const std::string_view area = p.area;
    clock.step("devices");
    entry.state = ClaimState::kPrepareCompleted;
    entry.prepared_devices = encode_prepared_groups(p.prepared);
    // The entry's last use: its JSON trees move into the update.
    if (auto st = co_await committer_.commit_one(p.claim.uid, std::move(entry)); !st) co_return st;
    crash_point(area, "prepare.after-completed");  // durable, kubelet not yet answered
    clock.step("completed");
    co_return Status{};
  };
  // Every planned step is undone in upstream's unprepare order (undo of a step that never ran is a
  // no-op); the error kubelet gets is the step's, what the rollback left is told on its own.
  // A rollback that left something behind keeps the entry, on disk from then on (it may have been
  // staged): start-up and the next prepare of the claim try again.
  hooks.rollback = [this](GpuPrepare& p) -> boost::asio::awaitable<Status> {
    std::vector<UndoGroup> undo;
    for (const auto& g : *p.groups) undo.push_back(undo_of(g, p.claim.uid, p.created));
    auto st = co_await undo_claim(p.claim, std::move(undo));
    if (st) co_return st;
    if (auto saved = co_await committer_.persist(p.claim.uid); !saved) {
      Error e = st.error();
      e.message += "; its PrepareStarted entry could not be saved either: " + saved.error().message;
      co_return e;
    }
    co_return st;
  };
  hooks.on_rollback_failed = [this, claim](GpuPrepare&, const Error& e) {
    report_failed_rollback(kGpuDriverName, claim, e, options_.on_rollback_failed);
  };
  return hooks;
}

}  // namespace nvdra::claims
