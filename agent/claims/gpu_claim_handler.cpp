#include "agent/claims/gpu_claim_handler.hpp"

#include <algorithm>
#include <set>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/base/step_clock.hpp"
#include "agent/claims/device_exclusivity.hpp"
#include "agent/claims/gpu_claim_support.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"

namespace nvdra::claims {

using namespace handler_detail;


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
  if (options_.mig_library) dynamic_mig_ = std::make_unique<DynamicMig>(
        pool_, *options_.mig_library, options_.metrics ? *options_.metrics : metrics::null_sink());
  if (options_.pci) vfio_ = std::make_unique<VfioStep>(pool_, *options_.pci, options_.vfio);
}

MpsDaemon GpuClaimHandler::mps_daemon(const std::string& id, std::vector<std::string> uuids, MpsPlan plan) const {
  std::sort(uuids.begin(), uuids.end());
  return MpsDaemon{id, options_.mps_root + "/" + id, std::move(uuids), std::move(plan)};
}

Result<std::vector<GpuClaimHandler::PlannedGroup>> GpuClaimHandler::plan_claim(ClaimAllocation& allocation,
                                                                               const kubelet::ClaimRef& claim) const {
  ResolveInput input{std::string(kGpuDriverName), ClaimRef{claim.namespace_name, claim.name, claim.uid}, {}, {},
                     options_.gates};
  for (auto& r : allocation.results) {
    if (r.driver != kGpuDriverName) continue;
    const auto* device = inventory_.find(r.device);
    if (!device) {
      std::string known;
      for (const auto& n : inventory_.names()) known += (known.empty() ? "" : ", ") + n;
      return claim_error(ErrorCode::kFailedPrecondition,
                         "allocated device \"" + r.device + "\" (request " + r.request +
                             ") is not a device of this node; devices here: " + known,
                         claim);
    }
    if (device->dynamic && !dynamic_mig_)
      return claim_error(ErrorCode::kFailedPrecondition,
                         "allocated device \"" + r.device + "\" is a DynamicMIG device, but this agent has no NVML "
                         "library to create MIG devices with",
                         claim);
    if (device->type == DeviceType::kVfio && !vfio_)
      return claim_error(ErrorCode::kFailedPrecondition,
                         "allocated device \"" + r.device + "\" is a VFIO device, but PassthroughSupport is off", claim);
    r.type = device->type;
  }
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
    if (group.plan.kind == SharingKind::kMps && group.plan.mps.multi_user)
      for (const auto* d : group.devices)
        if (d->type == DeviceType::kGpu && d->cuda_cc_major < 7)
          return claim_error(ErrorCode::kFailedPrecondition,
                             "multiuser mode was requested but is not supported: device " + d->name +
                                 " has compute capability " + std::to_string(d->cuda_cc_major) + ".x, needs >= 7.0",
                             claim);
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
      if (auto spec = co_await ensure_spec(claim, entry); !spec) co_return spec.error();
      co_return to_prepared_devices(*groups);
    }
    // A prepare that stopped half-way (error, cancellation, crash): undo it, then start afresh.
    auto undo = undo_groups(claim.uid, it->second);
    if (!undo) co_return undo.error();
    if (auto st = co_await undo_claim(claim, std::move(*undo)); !st) co_return st.error();
  }
  co_return co_await prepare_new(std::move(claim));
}

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
  // No suspension between this check and the PrepareStarted commit below: see device_exclusivity.hpp.
  if (auto free = check_device_exclusivity(committer_.current(), claim.uid, allocation->results, kGpuDriverName); !free)
    co_return for_claim(free.error(), claim);
  if (auto shared = shares_.check(committer_.current(), claim.uid, *allocation); !shared)
    co_return for_claim(shared.error(), claim);

  ClaimKind kind;
  for (const auto& g : *groups) {
    kind.mps |= g.plan.kind == SharingKind::kMps;
    kind.time_sliced |= g.plan.kind == SharingKind::kTimeSlicing && !g.gpu_uuids.empty();
    for (const auto* d : g.devices) kind.dynamic_mig |= d->dynamic, kind.mig |= d->type == DeviceType::kMig;
    kind.vfio |= g.vfio.has_value();
  }
  const std::string_view area = kind.area(mps_);
  if (auto free = check_twins_free(committer_.current(), claim.uid, allocation->results, inventory_); !free)
    co_return for_claim(free.error(), claim);
  auto fabric = fabric_plan_of(claim.uid, *groups);  // fails this claim only, before anything is recorded
  if (!fabric) co_return for_claim(fabric.error(), claim);
  if (options_.fabric) options_.fabric->hold(claim.uid, *fabric);

  CheckpointedClaim entry{ClaimState::kPrepareStarted, encode_claim_status(*allocation), {}, claim.name,
                          claim.namespace_name, {}};
  if (auto st = co_await committer_.commit({ClaimUpdate{claim.uid, entry}}); !st) {
    if (options_.fabric) options_.fabric->forget(claim.uid);
    co_return for_claim(st.error(), claim);
  }
  crash_point(area, "prepare.after-started");
  clock.step("started");

  // Side effects. On failure the claim is rolled back at once, so the node keeps no half-prepared
  // claim; if the rollback fails too, the PrepareStarted entry keeps it findable (the results name
  // the MIG devices to look for, by placement).
  std::map<std::string, nvml::MigDeviceInfo> created;  // DynamicMIG devices, by name
  std::map<std::string, nvml::MigDeviceInfo> shared;   // DynamicMIG devices live for another share
  Status side;
  if (options_.fabric) side = co_await options_.fabric->activate(claim, *fabric);
  for (const auto& group : *groups) {
    for (const auto* d : group.devices) {
      if (!d->dynamic || !side) continue;
      if (auto live = shares_.live_mig(committer_.current(), claim.uid, d->name)) {
        nvml::MigDeviceInfo info;
        info.uuid = live->uuid, info.gi_id = live->gi_id, info.ci_id = live->ci_id;
        shared.emplace(d->name, std::move(info));
        continue;
      }
      auto mig = co_await dynamic_mig_->create(*d);
      if (mig) created.emplace(d->name, std::move(*mig));
      else side = mig.error();
    }
  }
  std::map<std::string, cdi::ContainerEdits> vfio_edits;  // VFIO devices, by name, once bound
  const auto vfio_deadline = vfio_ ? vfio_->claim_deadline() : VfioStep::Deadline{};
  for (const auto& group : *groups)
    for (const auto* d : group.devices) {
      if (d->type != DeviceType::kVfio || !side || !group.vfio) continue;
      auto cdev = co_await vfio_->hand_over(*d, vfio_deadline);
      auto e = cdev ? vfio_->device_edits(*d, *group.vfio, *cdev) : Result<cdi::ContainerEdits>(cdev.error());
      if (e) vfio_edits.emplace(d->name, std::move(*e));
      else side = e.error();
    }
  std::vector<PreparedGroup> prepared(groups->size());
  std::vector<cdi::NamedEdits> edits;
  if (side) side = co_await pool_.run([&]() -> Status {
    for (std::size_t g = 0; g < groups->size(); ++g) {
      const auto& group = (*groups)[g];
      if (group.plan.kind == SharingKind::kTimeSlicing && !group.gpu_uuids.empty()) {
        if (auto st = smi_.set_time_slice(group.gpu_uuids, group.plan.time_slice); !st) return st;
        crash_point(area, "prepare.after-timeslice-set");
        prepared[g].time_slice_applied = true;
      }
      std::optional<MpsDaemon> daemon;
      if (group.plan.kind == SharingKind::kMps) {
        daemon = mps_daemon(mps_daemon_id(claim.uid, group.uuids), group.uuids, group.plan.mps);
        if (!group.gpu_uuids.empty())
          if (auto st = smi_.set_compute_mode(group.gpu_uuids, "EXCLUSIVE_PROCESS"); !st) return st;
        crash_point(area, "prepare.after-compute-mode");
        prepared[g].mps_daemon_id = daemon->id;
        if (auto st = mps_.start(*daemon); !st) return st;
        crash_point(area, "prepare.after-daemon-limits");
      }
      for (const auto* d : group.devices) {
        cdi::ContainerEdits e;
        if (d->type == DeviceType::kMig) {
          const nvml::MigDeviceInfo* live = nullptr;
          for (const auto* m : {&created, &shared})
            if (auto it = m->find(d->name); it != m->end()) live = &it->second;
          const unsigned gi = live ? live->gi_id : d->gi_id;
          const unsigned ci = live ? live->ci_id : d->ci_id;
          auto mig = cdi::read_mig_edits(cdi::MigDevice{d->parent_minor, gi, ci}, options_.host);
          if (!mig) return mig.error();
          e = std::move(*mig);
        } else if (d->type == DeviceType::kVfio) {
          e = vfio_edits[d->name];
        } else {
          e = cdi::gpu_edits(cdi::GpuDevice{d->minor, d->pci_bus_id}, options_.host);
        }
        if (daemon) {
          auto mps = cdi::mps_edits(cdi::MpsSettings{daemon->pipe_dir(), daemon->shm_dir(), {}});
          e.env.insert(e.env.end(), mps.env.begin(), mps.env.end());
          e.mounts.insert(e.mounts.end(), mps.mounts.begin(), mps.mounts.end());
          e.device_nodes.insert(e.device_nodes.end(), mps.device_nodes.begin(), mps.device_nodes.end());
        }
        edits.push_back(cdi::NamedEdits{d->name, std::move(e)});
      }
    }
    // Upstream replaces the spec-level edits of a claim with a VFIO device by the VFIO ones.
    const auto vfio_group = std::find_if(groups->begin(), groups->end(), [](const auto& g) { return g.vfio.has_value(); });
    auto claim_edits = vfio_group != groups->end() ? vfio_->claim_edits(*vfio_group->vfio) : options_.common_edits;
    if (vfio_group != groups->end()) {  // DeviceMetadata (KEP-5304): the VFIO devices' metadata files
      std::vector<MetadataDevice> devices;
      for (const auto& g : *groups)
        for (std::size_t k = 0; k < g.devices.size(); ++k)
          if (g.devices[k]->type == DeviceType::kVfio)
            devices.push_back({allocation->results[g.results[k]].request, g.devices[k]->name,
                               std::string(kGpuDriverName), options_.node_name, {}});
      auto mounts = vfio_->write_metadata(claim, allocation->pod_claim_name, std::move(devices));
      if (!mounts) return mounts.error();
      claim_edits.mounts.insert(claim_edits.mounts.end(), mounts->begin(), mounts->end());
    }
    auto spec = cdi::build_claim_spec(cdi::kGpuVendor, claim.uid, edits, claim_edits);
    if (!spec) return spec.error();
    if (auto st = specs_.write(*spec); !st) return st;
    crash_point(area, "prepare.after-cdi-write");
    // The ids of the devices, in the order the groups listed them: one claim-scoped id each, as upstream.
    std::size_t next = 0;
    for (std::size_t g = 0; g < groups->size(); ++g)
      for (std::size_t k = 0; k < (*groups)[g].devices.size(); ++k) {
        const auto* d = (*groups)[g].devices[k];
        const auto& r = allocation->results[(*groups)[g].results[k]];
        PreparedEntry entry{d->type, d->uuid, d->parent_uuid, d->parent_minor, d->gi_id,
                            d->ci_id, {r.request}, options_.node_name, d->name, {spec->device_ids[next++]},
                            r.share_id, {}};
        for (const auto* live : {&created, &shared})
          if (auto made = live->find(d->name); made != live->end())
            entry.uuid = made->second.uuid, entry.gi_id = made->second.gi_id, entry.ci_id = made->second.ci_id;
        if (d->type == DeviceType::kVfio)  // Metadata: DeviceMetadata only
          entry.pci_bus_id = d->pci_bus_id, entry.metadata = vfio_->checkpoint_metadata(d->name);
        prepared[g].devices.push_back(std::move(entry));
      }
    return {};
  });
  clock.step("devices");
  if (!side) {
    std::vector<UndoGroup> undo;
    for (const auto& g : *groups) undo.push_back(undo_of(g, claim.uid, created));
    // The error below is the one kubelet gets; what the rollback left is told on its own.
    if (auto st = co_await undo_claim(claim, std::move(undo)); !st)
      report_failed_rollback(kGpuDriverName, claim, st.error(), options_.on_rollback_failed);
    co_return for_claim(side.error(), claim);
  }

  entry.state = ClaimState::kPrepareCompleted;
  entry.prepared_devices = encode_prepared_groups(prepared);
  if (auto st = co_await committer_.commit({ClaimUpdate{claim.uid, entry}}); !st) co_return for_claim(st.error(), claim);
  crash_point(area, "prepare.after-completed");  // durable, kubelet not yet answered
  clock.step("completed");
  if (options_.on_devices_changed) options_.on_devices_changed();
  // describe() formats strings: only when the line will be written, not on every prepare.
  if (auto log = nvdra::logger("claims"); log->should_log(spdlog::level::debug))
    log->debug("claim {}/{} prepared in {}", claim.namespace_name, claim.name, clock.describe());
  co_return to_prepared_devices(prepared);
}

}  // namespace nvdra::claims
