// Device metadata step (DeviceMetadata, KEP-5304): a claim with VFIO devices gets their metadata
// files, mounted through the spec-level edits; unprepare and rollback remove them (missing is fine).
// Crash point vfio.prepare.after-metadata-write is VfioStep's. Nothing at start-up.
#include <algorithm>

#include "agent/claims/steps/gpu_step_list.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {
namespace {

class DeviceMetadataStep final : public GpuStep {
 public:
  std::string_view name() const override { return "device-metadata"; }
  Status plan(GpuPrepare&) const override { return {}; }

  // Metadata files of a VFIO claim: start-up removes them by the entry.
  bool needs_record(const GpuPrepare& c) const override { return plans_vfio(c); }

  boost::asio::awaitable<Status> apply(GpuPrepare& c) override {
    if (!plans_vfio(c)) co_return Status{};
    co_return co_await c.node.pool.run([&c]() -> Status {
      std::vector<MetadataDevice> devices;
      for (const auto& g : *c.groups)
        for (std::size_t k = 0; k < g.devices.size(); ++k)
          if (g.devices[k]->type == DeviceType::kVfio)
            devices.push_back({c.allocation->results[g.results[k]].request, g.devices[k]->name,
                               std::string(kGpuDriverName), c.node.node_name, {}});
      auto mounts = c.node.vfio->write_metadata(c.claim, c.allocation->pod_claim_name, std::move(devices));
      if (!mounts) return mounts.error();
      // The spec-level edits are shared (often the driver's common edits): this claim's get a copy.
      auto edits = c.claim_edits ? std::make_shared<cdi::ContainerEdits>(*c.claim_edits)
                                 : std::make_shared<cdi::ContainerEdits>();
      edits->mounts.insert(edits->mounts.end(), mounts->begin(), mounts->end());
      c.claim_edits = std::move(edits);
      return {};
    });
  }

  boost::asio::awaitable<Status> undo(GpuPrepare& c) override {
    const bool vfio = std::any_of(c.undo.begin(), c.undo.end(), [](const auto& g) { return !g.vfio.empty(); });
    if (!vfio || !c.node.vfio) co_return Status{};
    co_return co_await c.node.pool.run([&c] { return c.node.vfio->remove_metadata(c.claim); });
  }

  boost::asio::awaitable<Status> recover(GpuPrepare&) override { co_return Status{}; }
};

}  // namespace

GpuStep& device_metadata_step() {
  static DeviceMetadataStep step;
  return step;
}

}  // namespace nvdra::claims
