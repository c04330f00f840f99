#pragma once
// The container edits of each full GPU (/dev/nvidia<minor> and its DRM nodes), read from the host
// once and kept 5 minutes, as upstream keeps nvcdi's device specs (upstream-driver.md §5.1: "cached
// 5 min"). A prepare whose devices are all full GPUs with kept edits builds its device edits on the
// loop thread instead of taking a trip to the worker pool (two thread switches). Thread-safe: read
// on the loop, filled on the pool.
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "cdi/device_edits.hpp"

namespace nvdra::claims {

class GpuEditsCache {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::minutes kKeepFor{5};

  explicit GpuEditsCache(std::function<Clock::time_point()> now = Clock::now) : now_(std::move(now)) {}

  // The GPU's edits when they were read less than kKeepFor ago.
  std::optional<cdi::ContainerEdits> find(const cdi::GpuDevice& gpu) const {
    std::lock_guard lock(mu_);
    auto it = kept_.find(gpu.minor);
    if (it == kept_.end() || it->second.pci_bus_id != gpu.pci_bus_id || now_() - it->second.read_at >= kKeepFor)
      return std::nullopt;
    return it->second.edits;
  }

  // Reads the GPU's edits from the host (blocking: /dev and sysfs) and keeps them.
  cdi::ContainerEdits read(const cdi::GpuDevice& gpu, const cdi::HostView& host) {
    auto edits = cdi::gpu_edits(gpu, host);
    std::lock_guard lock(mu_);
    kept_[gpu.minor] = Kept{gpu.pci_bus_id, edits, now_()};
    return edits;
  }

 private:
  struct Kept {
    std::string pci_bus_id;
    cdi::ContainerEdits edits;
    Clock::time_point read_at;
  };
  std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::map<unsigned, Kept> kept_;
};

}  // namespace nvdra::claims
