#include "agent/claims/vfio/vfio_step.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/claims/claim/device_metadata.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "nvml/pci_gpus.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::claims {
namespace {

using Clock = std::chrono::steady_clock;

boost::asio::awaitable<void> pause(std::chrono::milliseconds d) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, d);
  co_await timer.async_wait(boost::asio::use_awaitable);  // throws when the prepare is cancelled
}

std::string seconds(std::chrono::milliseconds d) {
  return std::to_string(d.count() / 1000) + (d.count() % 1000 ? "." + std::to_string(d.count() % 1000 / 100) : "") +
         "s";
}

std::string describe(const std::vector<GpuHolder>& holders) {
  std::string out;
  for (const auto& h : holders)
    out += (out.empty() ? "" : ", ") + std::string("pid ") + std::to_string(h.pid) + " (" + h.command + ")";
  return out;
}

// Device names of gpu.nvidia.com results per claim in the checkpoint (either state).
std::map<std::string, std::vector<std::string>> held_devices(const Checkpoint& checkpoint) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [uid, entry] : checkpoint.claims)
    for (const auto& r : result_views(entry.status))
      if (r.driver == kGpuDriverName) out[uid].emplace_back(r.device);
  return out;
}

}  // namespace

Status check_twins_free(const Checkpoint& checkpoint, const std::string& uid,
                        const std::vector<AllocationResult>& results, const GpuInventory& inventory) {
  // Only a device with a twin (a GPU and its VFIO form) can collide this way: none, no look.
  const bool any_twin = std::any_of(results.begin(), results.end(), [&](const AllocationResult& r) {
    const auto* d = r.driver == kGpuDriverName ? inventory.find(r.device) : nullptr;
    return d && !d->twin.empty();
  });
  if (!any_twin) return {};
  const auto held = held_devices(checkpoint);
  for (const auto& r : results) {
    if (r.driver != kGpuDriverName) continue;
    const auto* d = inventory.find(r.device);
    if (!d || d->twin.empty()) continue;
    for (const auto& [other, names] : held)
      if (other != uid && std::find(names.begin(), names.end(), d->twin) != names.end())
        return make_error(ErrorCode::kFailedPrecondition,
                          "requested device " + r.device + " is the same GPU as " + d->twin +
                              ", which is already allocated to different claim " + other);
  }
  return {};
}

std::vector<std::string> withdrawn_twins(const Checkpoint& checkpoint, const GpuInventory& inventory) {
  std::vector<std::string> out;
  for (const auto& [uid, names] : held_devices(checkpoint))
    for (const auto& n : names)
      if (const auto* d = inventory.find(n); d && !d->twin.empty()) out.push_back(d->twin);
  return out;
}

VfioStep::VfioStep(runtime::WorkerPool& pool, PciBinder& binder, VfioStepOptions options)
    : pool_(pool), binder_(binder), options_(std::move(options)) {}

boost::asio::awaitable<Status> VfioStep::wait_for_driver(const std::string& address, const std::string& driver,
                                                         const std::string& what) {
  const auto deadline = Clock::now() + options_.bind_deadline;
  for (;;) {
    auto now = co_await pool_.run([&] { return binder_.driver(address); });
    if (!now) co_return now.error();
    if (*now == driver) co_return Status{};
    if (Clock::now() >= deadline)
      co_return make_error(ErrorCode::kUnavailable,
                           what + " " + address + " is bound to " + (now->empty() ? "no driver" : *now) + ", not " +
                               (driver.empty() ? "none" : driver) + ", " + seconds(options_.bind_deadline) +
                               " after the write (" +
                               (driver.empty() ? std::string("did the kernel refuse the unbind?")
                                               : "did the kernel refuse the bind? is the " + driver + " module loaded?") +
                               ")");
    co_await pause(options_.bind_poll);
  }
}

VfioStep::Deadline VfioStep::claim_deadline() const { return Clock::now() + options_.busy_deadline; }

boost::asio::awaitable<Status> VfioStep::wait_until_free(const InventoryDevice& d, Deadline deadline) {
  if (!d.has_minor) co_return Status{};
  const unsigned minor = d.minor;
  for (;;) {
    auto seen = co_await pool_.run([&] { return binder_.holders(minor); });
    // Blind (no host /proc): fail now, naming what is missing, rather than guess the GPU is free.
    if (!seen)
      co_return make_error(seen.error().code, "GPU " + d.pci_bus_id + " (" + d.name + ", /dev/nvidia" +
                                                  std::to_string(minor) + ") stays on nvidia: " + seen.error().message);
    const auto& holders = *seen;
    if (holders.empty()) co_return Status{};
    if (Clock::now() >= deadline)
      co_return make_error(ErrorCode::kUnavailable,
                           "GPU " + d.pci_bus_id + " (" + d.name + ", /dev/nvidia" + std::to_string(minor) +
                               ") is still in use by " + describe(holders) + " at the end of the claim's " +
                               seconds(options_.busy_deadline) +
                               " wait for its GPUs to be free; stop them (or the host service that runs them) and retry");
    co_await pause(options_.busy_poll);
  }
}

boost::asio::awaitable<Status> VfioStep::disable_persistence(const InventoryDevice& d) {
  if (!options_.disable_persistence || options_.persistenced_socket.empty()) co_return Status{};
  co_return co_await pool_.run([&]() -> Status {
    std::error_code ec;
    if (!std::filesystem::exists(options_.persistenced_socket, ec)) return {};  // not running: nothing to do
    if (auto st = options_.disable_persistence(d.pci_bus_id); !st)
      return make_error(st.error().code, "error disabling persistence mode for GPU " + d.pci_bus_id + " (" + d.name +
                                             "): " + st.error().message);
    return {};
  });
}

boost::asio::awaitable<Result<std::optional<nvml::CallGate::Shut>>> VfioStep::release_own_hold(
    const InventoryDevice& d) {
  using Released = Result<std::optional<nvml::CallGate::Shut>>;
  if (!d.has_minor) co_return std::optional<nvml::CallGate::Shut>();
  const unsigned minor = d.minor;
  co_return co_await pool_.run([&]() -> Released {
    std::optional<nvml::CallGate::Shut> shut;
    if (options_.release_gpus) {
      auto r = options_.release_gpus("GPU " + d.pci_bus_id + " (" + d.name + ") is being handed to vfio-pci");
      if (!r) return std::move(r).error();
      shut.emplace(std::move(*r));
    }
    if (!binder_.self_holds(minor)) return shut;
    // The nvidia driver's unbind would wait for this very process: fail the claim instead of hanging.
    return make_error(ErrorCode::kInternal, "GPU " + d.pci_bus_id + " (" + d.name + ", /dev/nvidia" +
                                                std::to_string(minor) +
                                                ") is still open in this agent after its NVML session let go of "
                                                "the GPUs; not unbinding it (the kernel would wait for the agent)");
  });
}

boost::asio::awaitable<Status> VfioStep::rebind(const std::string& address, const std::string& from,
                                                const std::string& to, const std::string& what) {
  if (!from.empty()) {
    if (auto st = co_await pool_.run([&] { return binder_.unbind(address, from); }); !st) co_return st;
    if (auto st = co_await wait_for_driver(address, "", what); !st) co_return st;
  }
  auto st = co_await pool_.run([&]() -> Status {
    if (auto s = binder_.set_override(address, to == nvml::kVfioPciDriver ? to : ""); !s) return s;
    return binder_.probe(address);
  });
  co_return st;
}

boost::asio::awaitable<Result<std::string>> VfioStep::hand_over(const InventoryDevice& d, Deadline busy_until) {
  auto log = nvdra::logger("claims");
  auto driver = co_await pool_.run([&] { return binder_.driver(d.pci_bus_id); });
  if (!driver) co_return driver.error();
  if (*driver != nvml::kVfioPciDriver) {
    if (!driver->empty() && *driver != nvml::kNvidiaDriver)
      co_return make_error(ErrorCode::kFailedPrecondition, "GPU " + d.pci_bus_id + " (" + d.name +
                                                               ") is bound to driver " + *driver +
                                                               ", expected nvidia or vfio-pci");
    if (!driver->empty()) {
      if (auto st = co_await disable_persistence(d); !st) co_return st.error();
      if (auto st = co_await wait_until_free(d, busy_until); !st) co_return st.error();
      // NVML stays off the GPUs from here until this one has left nvidia (`released` dropped).
      auto released = co_await release_own_hold(d);
      if (!released) co_return std::move(released).error();
      if (auto st = co_await pool_.run([&] { return binder_.unbind(d.pci_bus_id, *driver); }); !st)
        co_return st.error();
      if (auto st = co_await wait_for_driver(d.pci_bus_id, "", "GPU"); !st) co_return st.error();
    }
    crash_point("vfio.prepare.after-unbind");
  }
  // The kernel hands over an IOMMU group only whole: the card's other functions (HDMI audio) go too.
  for (const auto& f : d.group_functions) {
    auto fd = co_await pool_.run([&] { return binder_.driver(f); });
    if (!fd) co_return fd.error();
    if (*fd == nvml::kVfioPciDriver) continue;
    if (auto st = co_await rebind(f, *fd, nvml::kVfioPciDriver, "function"); !st) co_return st.error();
    if (auto st = co_await wait_for_driver(f, nvml::kVfioPciDriver, "function"); !st) co_return st.error();
  }
  if (*driver != nvml::kVfioPciDriver) {
    if (auto st = co_await rebind(d.pci_bus_id, "", nvml::kVfioPciDriver, "GPU"); !st) co_return st.error();
    if (auto st = co_await wait_for_driver(d.pci_bus_id, nvml::kVfioPciDriver, "GPU"); !st) co_return st.error();
    crash_point("vfio.prepare.after-bind-vfio");
    log->info("gpu={} device={} bound to vfio-pci", d.pci_bus_id, d.name);
  }
  // The kernel links the driver before vfio-pci's probe registers the device's cdev, so on an
  // iommufd host the cdev may follow the bind by a moment: wait for it within the bind deadline.
  const auto deadline = Clock::now() + options_.bind_deadline;
  for (;;) {
    auto cdev = co_await pool_.run([&] { return binder_.iommufd_cdev(d.pci_bus_id); });
    if (!options_.iommufd || !cdev.empty() || Clock::now() >= deadline) co_return cdev;
    co_await pause(options_.bind_poll);
  }
}

boost::asio::awaitable<Status> VfioStep::give_back(const InventoryDevice& d) {
  if (!options_.nvidia_enabled) co_return Status{};
  auto driver = co_await pool_.run([&] { return binder_.driver(d.pci_bus_id); });
  if (!driver) co_return driver.error();
  if (*driver != nvml::kNvidiaDriver) {
    if (!driver->empty() && *driver != nvml::kVfioPciDriver)
      co_return make_error(ErrorCode::kFailedPrecondition, "GPU " + d.pci_bus_id + " (" + d.name +
                                                               ") is bound to driver " + *driver +
                                                               ", expected vfio-pci or nvidia");
    if (!driver->empty()) {
      if (auto st = co_await pool_.run([&] { return binder_.unbind(d.pci_bus_id, *driver); }); !st) co_return st;
      if (auto st = co_await wait_for_driver(d.pci_bus_id, "", "GPU"); !st) co_return st;
      crash_point("vfio.unprepare.after-unbind");
    }
    if (auto st = co_await rebind(d.pci_bus_id, "", nvml::kNvidiaDriver, "GPU"); !st) co_return st;
    if (auto st = co_await wait_for_driver(d.pci_bus_id, nvml::kNvidiaDriver, "GPU"); !st) co_return st;
    crash_point("vfio.unprepare.after-bind-nvidia");
    nvdra::logger("claims")->info("gpu={} device={} back on nvidia", d.pci_bus_id, d.name);
  }
  // The card's other functions go back to their own drivers (best effort: the host may not load one).
  for (const auto& f : d.group_functions) {
    auto fd = co_await pool_.run([&] { return binder_.driver(f); });
    if (fd && *fd == nvml::kVfioPciDriver)
      if (auto st = co_await rebind(f, *fd, "", "function"); !st) co_return st;
  }
  if (!options_.rediscover) co_return Status{};
  const auto deadline = Clock::now() + options_.bind_deadline;
  bool told = false;
  for (;;) {
    auto model = co_await pool_.run([&] { return options_.rediscover(d.pci_bus_id); });
    // Transient (NVML kept off the GPUs while another claim's GPU leaves nvidia, say): asked again.
    if (!model && (model.error().code != ErrorCode::kUnavailable || Clock::now() >= deadline))
      co_return model.error();
    if (!model && !std::exchange(told, true))
      nvdra::logger("claims")->info("gpu={} device={} NVML cannot be asked about the GPUs yet ({}); asking again",
                                    d.pci_bus_id, d.name, model.error().message);
    if (model && *model) {
      if (options_.enable_persistence) {
        const auto& gpus = (*model)->gpus;
        auto g = std::find_if(gpus.begin(), gpus.end(),
                              [&](const auto& x) { return nvml::normalize_bus_id(x.pci.bus_id) == d.pci_bus_id; });
        if (g != gpus.end())
          if (auto st = co_await pool_.run([&] { return options_.enable_persistence(g->uuid); }); !st)
            co_return make_error(st.error().code, "error enabling persistence mode for GPU " + d.pci_bus_id + " (" +
                                                      d.name + "): " + st.error().message);
      }
      if (options_.on_gpu_back) options_.on_gpu_back(**model);
      co_return Status{};
    }
    if (Clock::now() >= deadline)
      co_return make_error(ErrorCode::kUnavailable, "GPU " + d.pci_bus_id + " is bound to nvidia again, but NVML "
                                                    "does not see it " + seconds(options_.bind_deadline) + " later");
    co_await pause(options_.bind_poll);
  }
}

cdi::ContainerEdits VfioStep::claim_edits(const VfioDeviceConfig& c) const {
  cdi::ContainerEdits e;
  e.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
  // Upstream's GetCommonEdits: without enableAPIDevice only the env ("IOMMU API device is not
  // requested"); with it /dev/iommu (PreferIommuFD on an iommufd host) or else /dev/vfio/vfio.
  if (!c.iommu || !c.iommu->enable_api_device) return e;
  cdi::DeviceNode api;
  api.path = c.iommu->backend_policy == "PreferIommuFD" && options_.iommufd ? "/dev/iommu" : "/dev/vfio/vfio";
  e.device_nodes.push_back(std::move(api));
  return e;
}

Result<cdi::ContainerEdits> VfioStep::device_edits(const InventoryDevice& d, const VfioDeviceConfig& c,
                                                   const std::string& cdev) const {
  cdi::ContainerEdits e;
  cdi::DeviceNode node;
  if (c.iommu && c.iommu->backend_policy == "PreferIommuFD" && options_.iommufd) {
    if (cdev.rfind("vfio", 0) != 0)
      return make_error(ErrorCode::kFailedPrecondition,
                        "missing iommufd cdev for GPU " + d.pci_bus_id + " (" + d.name + "): found \"" + cdev + "\"");
    node.path = "/dev/vfio/devices/" + cdev;
  } else {
    node.path = "/dev/vfio/" + std::to_string(d.iommu_group);
  }
  e.device_nodes.push_back(std::move(node));
  return e;
}

boost::json::object VfioStep::checkpoint_metadata(const std::string& device) const {
  if (!metadata_enabled() || !options_.published) return {};
  auto d = options_.published(device);
  return d ? device_metadata(*d) : boost::json::object{};
}

namespace {
// pod_claim_name (the claim's pod-claim-name annotation) picks the resourceclaimtemplates/ path; the
// host directory, and so the removal at unprepare, depends on the namespace and name only.
MetadataClaim metadata_claim(const kubelet::ClaimRef& claim, std::optional<std::string> pod_claim_name = {}) {
  return MetadataClaim{claim.namespace_name, claim.name, claim.uid, 1, std::move(pod_claim_name)};
}
}  // namespace

Result<std::vector<cdi::Mount>> VfioStep::write_metadata(const kubelet::ClaimRef& ref,
                                                         const std::optional<std::string>& pod_claim_name,
                                                         std::vector<MetadataDevice> devices) const {
  const auto claim = metadata_claim(ref, pod_claim_name);
  if (!metadata_enabled() || devices.empty()) return std::vector<cdi::Mount>{};
  for (auto& d : devices)
    if (options_.published)
      if (auto p = options_.published(d.name)) d.attributes = p->attributes;
  auto mounts = write_metadata_files(options_.metadata_root, std::string(kGpuDriverName), claim, devices);
  if (mounts) crash_point("vfio.prepare.after-metadata-write");
  return mounts;
}

Status VfioStep::remove_metadata(const kubelet::ClaimRef& claim) const {
  if (!metadata_enabled()) return {};
  return remove_metadata_files(options_.metadata_root, metadata_claim(claim));
}

}  // namespace nvdra::claims
