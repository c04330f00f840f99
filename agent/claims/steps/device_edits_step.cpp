// CDI device edits step: each device's container edits (a full GPU's nodes, a MIG device's caps by
// its live ids, a bound VFIO device's group node; an MPS group's pipe and shm), and the spec-level
// edits (the driver's common edits, or upstream's VFIO ones for a claim with a VFIO device). It
// reads the host only (a full GPU's nodes at most every 5 minutes: GpuEditsCache): nothing to undo
// or recover; the claim spec step writes what it built.
#include <algorithm>

#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

void append(cdi::ContainerEdits& to, const cdi::ContainerEdits& more) {
  to.env.insert(to.env.end(), more.env.begin(), more.env.end());
  to.mounts.insert(to.mounts.end(), more.mounts.begin(), more.mounts.end());
  to.device_nodes.insert(to.device_nodes.end(), more.device_nodes.begin(), more.device_nodes.end());
}

// A device's edits from memory: a full GPU's kept ones, a bound VFIO device's; nullopt when the host
// must be read (a MIG device's caps, a full GPU not read lately).
std::optional<cdi::ContainerEdits> known_edits(const GpuPrepare& c, const InventoryDevice& d) {
  if (d.type == DeviceType::kVfio) {
    auto it = c.vfio_edits.find(d.name);
    return it != c.vfio_edits.end() ? it->second : cdi::ContainerEdits{};
  }
  if (d.type == DeviceType::kGpu) return c.node.gpu_edits.find(cdi::GpuDevice{d.minor, d.pci_bus_id});
  return std::nullopt;
}

// Blocking: reads /dev, sysfs and the MIG caps under the host root.
Result<cdi::ContainerEdits> read_edits(const GpuPrepare& c, const InventoryDevice& d) {
  if (auto known = known_edits(c, d)) return std::move(*known);
  if (d.type == DeviceType::kGpu) return c.node.gpu_edits.read(cdi::GpuDevice{d.minor, d.pci_bus_id}, c.node.host);
  const nvml::MigDeviceInfo* live = nullptr;
  for (const auto* m : {&c.created, &c.shared})
    if (auto it = m->find(d.name); it != m->end()) live = &it->second;
  const unsigned gi = live ? live->gi_id : d.gi_id;
  const unsigned ci = live ? live->ci_id : d.ci_id;
  return cdi::read_mig_edits(cdi::MigDevice{d.parent_minor, gi, ci}, c.node.host);
}

// Every device's edits, in group order, from memory; nullopt when one needs a read of the host.
std::optional<std::vector<cdi::ContainerEdits>> all_known(const GpuPrepare& c) {
  std::vector<cdi::ContainerEdits> out;
  for (const auto& group : *c.groups)
    for (const auto* d : group.devices) {
      auto e = known_edits(c, *d);
      if (!e) return std::nullopt;
      out.push_back(std::move(*e));
    }
  return out;
}

// The claim's edits from each device's (in group order): an MPS group's pipe and shm added, then the
// spec-level edits.
void assemble(GpuPrepare& c, std::vector<cdi::ContainerEdits> device_edits) {
  std::size_t next = 0;
  for (std::size_t g = 0; g < c.groups->size(); ++g)
    for (const auto* d : (*c.groups)[g].devices) {
      auto& e = device_edits[next++];
      if (const auto& daemon = c.daemons[g])
        append(e, cdi::mps_edits(cdi::MpsSettings{daemon->pipe_dir(), daemon->shm_dir(), {}}));
      c.edits.push_back(cdi::NamedEdits{d->name, std::move(e)});
    }
  // Upstream replaces the spec-level edits of a claim with a VFIO device by the VFIO ones.
  const auto vfio = std::find_if(c.groups->begin(), c.groups->end(), [](const auto& g) { return g.vfio.has_value(); });
  c.claim_edits = vfio != c.groups->end() ? std::make_shared<const cdi::ContainerEdits>(c.node.vfio->claim_edits(*vfio->vfio))
                                          : c.node.common_edits;
}

class DeviceEditsStep final : public GpuStep {
 public:
  std::string_view name() const override { return "device-edits"; }
  Status plan(GpuPrepare&) const override { return {}; }

  // Edits in memory only.
  bool needs_record(const GpuPrepare&) const override { return false; }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    // Nothing to read from the host: no trip to the worker pool.
    if (auto known = all_known(c)) {
      assemble(c, std::move(*known));
      co_return Status{};
    }
    co_return co_await c.node.pool.run([&c]() -> Status {
      std::vector<cdi::ContainerEdits> read;
      for (const auto& group : *c.groups)
        for (const auto* d : group.devices) {
          auto e = read_edits(c, *d);
          if (!e) return e.error();
          read.push_back(std::move(*e));
        }
      assemble(c, std::move(read));
      return {};
    });
  }
  boost::asio::awaitable<Status> undo(GpuPrepare&) override { co_return Status{}; }  // nothing left on the node
  boost::asio::awaitable<Status> recover(GpuPrepare&) override { co_return Status{}; }
};

}  // namespace

GpuStep& device_edits_step() {
  static DeviceEditsStep step;
  return step;
}

}  // namespace nvdra::claims
