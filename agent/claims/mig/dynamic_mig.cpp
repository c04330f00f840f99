#include "agent/claims/mig/dynamic_mig.hpp"

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::claims {

boost::asio::awaitable<Result<nvml::MigDeviceInfo>> DynamicMig::create(const InventoryDevice& d) {
  auto guard = co_await locks_.lock(d.parent_uuid);
  if (!guard) co_return guard.error();
  co_return co_await pool_.run([&]() -> Result<nvml::MigDeviceInfo> {
    auto mode = library_.mig_mode(d.parent_uuid);
    if (!mode) return mode.error();
    if (!mode->current_enabled) {
      if (!d.parent_hopper)
        return make_error(ErrorCode::kFailedPrecondition,
                          "MIG mode is off on GPU " + d.parent_uuid + " (pre-Hopper GPUs are not switched to MIG mode, "
                          "as upstream); cannot create " + d.name);
      auto change = library_.set_mig_mode(d.parent_uuid, true);
      if (!change) return change.error();
      if (!change->active)
        return make_error(ErrorCode::kUnavailable, "MIG mode on GPU " + d.parent_uuid + " is pending (" + change->detail +
                                                       "); cannot create " + d.name);
      crash_point("mig-dynamic.prepare.after-mig-mode-on");  // Hopper: MIG mode on, no instance yet
    }
    auto created = library_.create_mig_device(d.parent_uuid, d.mig_request);
    if (!created) {
      Error e = created.error();
      e.message = "creating MIG device " + d.name + ": " + e.message;
      return e;
    }
    metrics_.mig_device_created();
    return created;
  });
}

Status DynamicMig::destroy_locked(const std::string& gpu_uuid, bool hopper, unsigned gi_id, unsigned ci_id) {
  if (auto st = library_.destroy_mig_device(gpu_uuid, gi_id, ci_id); !st) return st;
  metrics_.mig_device_destroyed();
  disable_if_unused_locked(gpu_uuid, hopper);
  return {};
}

void DynamicMig::disable_if_unused_locked(const std::string& gpu_uuid, bool hopper) {
  if (!hopper) return;
  auto left = library_.mig_devices(gpu_uuid);
  auto mode = library_.mig_mode(gpu_uuid);
  if (!left || !mode || !left->empty() || !mode->current_enabled) return;
  if (auto off = library_.set_mig_mode(gpu_uuid, false); !off)
    logger("claims")->warn("GPU {}: no MIG device left, but MIG mode stays on: {}", gpu_uuid, off.error().describe());
}

boost::asio::awaitable<Status> DynamicMig::destroy(const InventoryDevice& d, unsigned gi_id, unsigned ci_id) {
  auto guard = co_await locks_.lock(d.parent_uuid);
  if (!guard) co_return guard.error();
  co_return co_await pool_.run([&] { return destroy_locked(d.parent_uuid, d.parent_hopper, gi_id, ci_id); });
}

boost::asio::awaitable<Status> DynamicMig::destroy_by_name(const InventoryDevice& d) {
  auto guard = co_await locks_.lock(d.parent_uuid);
  if (!guard) co_return guard.error();
  co_return co_await pool_.run([&]() -> Status {
    auto existing = library_.mig_devices(d.parent_uuid);
    if (!existing) return existing.error();
    for (const auto& m : *existing)
      if (m.canonical_name() == d.name) return destroy_locked(d.parent_uuid, d.parent_hopper, m.gi_id, m.ci_id);
    // Not a MIG device: a GPU instance without its compute instance may still hold the placement.
    auto bare = library_.bare_gpu_instances(d.parent_uuid);
    if (!bare) return bare.error();
    for (const auto& gi : *bare) {
      if (gi.gi_profile_id != d.mig_request.gi_profile_id || gi.placement.start != d.mig_request.placement_start)
        continue;
      if (auto st = library_.destroy_gpu_instance(d.parent_uuid, gi.gi_id); !st) return st;
      disable_if_unused_locked(d.parent_uuid, d.parent_hopper);
    }
    return {};
  });
}

boost::asio::awaitable<std::vector<std::string>> DynamicMig::destroy_bare_instances(const DynamicGpu& gpu,
                                                                                    std::vector<Error>& errors) {
  std::vector<std::string> destroyed;
  auto guard = co_await locks_.lock(gpu.uuid);
  if (!guard) {
    errors.push_back(guard.error());
    co_return destroyed;
  }
  co_await pool_.run([&] {
    auto bare = library_.bare_gpu_instances(gpu.uuid);
    if (!bare) {
      errors.push_back(bare.error());
      return 0;
    }
    if (bare->empty()) return 0;
    auto profiles = library_.mig_profiles(gpu.uuid);
    for (const auto& gi : *bare) {
      std::string name = "GPU instance " + std::to_string(gi.gi_id) + " of " + gpu.uuid;
      if (profiles)
        for (const auto& p : *profiles)
          if (p.gi_profile_id == gi.gi_profile_id)
            name = nvml::mig_device_name(gpu.minor, p.name, gi.gi_profile_id, gi.placement.start);
      if (auto st = library_.destroy_gpu_instance(gpu.uuid, gi.gi_id); !st) {
        Error e = st.error();
        e.message = "destroying GPU instance without compute instance (" + name + "): " + e.message;
        errors.push_back(std::move(e));
      } else {
        destroyed.push_back(std::move(name));
      }
    }
    return 0;
  });
  co_return destroyed;
}

boost::asio::awaitable<Result<std::vector<nvml::MigDeviceInfo>>> DynamicMig::list(const std::string& gpu_uuid) {
  auto guard = co_await locks_.lock(gpu_uuid);
  if (!guard) co_return guard.error();
  co_return co_await pool_.run([&] { return library_.mig_devices(gpu_uuid); });
}

boost::asio::awaitable<Status> DynamicMig::destroy_instance(const DynamicGpu& gpu, const nvml::MigDeviceInfo& mig) {
  auto guard = co_await locks_.lock(gpu.uuid);
  if (!guard) co_return guard.error();
  co_return co_await pool_.run([&] {
    auto st = library_.destroy_mig_device(gpu.uuid, mig.gi_id, mig.ci_id);
    if (st) metrics_.mig_device_destroyed();
    return st;
  });
}

boost::asio::awaitable<Status> DynamicMig::disable_if_unused(const DynamicGpu& gpu) {
  auto guard = co_await locks_.lock(gpu.uuid);
  if (!guard) co_return guard.error();
  co_await pool_.run([&] {
    disable_if_unused_locked(gpu.uuid, gpu.hopper);
    return 0;
  });
  co_return Status{};
}

}  // namespace nvdra::claims
