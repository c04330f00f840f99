#include "nvml/partitions.hpp"

#include <algorithm>
#include <map>

#include "nvml/published_devices.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// A profile's capacities by capacity name (§2.2, without memorySlice*).
std::map<std::string, uint64_t> capacities(const MigProfileInfo& p) {
  return {{"multiprocessors", p.multiprocessors}, {"copyEngines", p.copy_engines}, {"decoders", p.decoders},
          {"encoders", p.encoders},               {"jpegEngines", p.jpeg_engines}, {"ofaEngines", p.ofa_engines},
          {"memory", p.memory_mib * kMiB}};
}

// Counter names are the capacity names in kebab case (copyEngines -> copy-engines).
std::string counter_name(const std::string& capacity) {
  std::string out;
  for (char c : capacity) {
    if (c >= 'A' && c <= 'Z') {
      out += '-';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

std::string memory_slice(unsigned i) { return "memory-slice-" + std::to_string(i); }

struct GpuCounters {
  std::map<std::string, uint64_t> max;  // by capacity name
  unsigned memory_slices = 0;
};

GpuCounters counters_of(const GpuInfo& g) {
  GpuCounters out;
  for (const auto& p : g.mig_profiles) {
    for (const auto& [name, value] : capacities(p)) out.max[name] = std::max(out.max[name], value);
    for (const auto& pl : p.placements) out.memory_slices = std::max(out.memory_slices, pl.size);
  }
  return out;
}

void publish_gpu(const GpuInfo& g, const SystemInfo& sys, DriverResources& out) {
  const GpuCounters counters = counters_of(g);
  const bool have_counters = !counters.max.empty();
  const std::string set = counter_set_name(g);
  CounterSet counter_set{set, {}};
  for (const auto& [name, value] : counters.max) counter_set.counters[counter_name(name)] = binary_si(value);
  for (unsigned i = 0; i < counters.memory_slices; ++i) counter_set.counters[memory_slice(i)] = "1";

  // Pre-Hopper GPUs in MIG mode cannot run as a whole GPU without a reset: MIG devices only.
  if (hopper_or_newer(g) || !g.mig_enabled) {
    PublishedDevice full = published_gpu(g, sys);
    if (have_counters) {
      full.capacity.clear();
      for (const auto& [name, value] : counters.max) full.capacity[name] = binary_si(value);
      full.consumes_counters.push_back(CounterConsumption{set, counter_set.counters});
    }
    out.devices.push_back(std::move(full));
  }
  for (const auto& m : possible_mig_devices(g)) {
    PublishedDevice d = published_dynamic_mig(g, m.profile, m.placement, sys);
    CounterConsumption use{set, {}};
    for (const auto& [name, value] : capacities(m.profile)) use.counters[counter_name(name)] = binary_si(value);
    for (unsigned i = m.placement.start; i < m.placement.start + m.placement.size; ++i) use.counters[memory_slice(i)] = "1";
    d.consumes_counters.push_back(std::move(use));
    out.devices.push_back(std::move(d));
  }
  if (have_counters) out.shared_counters.push_back(std::move(counter_set));
}

}  // namespace

bool hopper_or_newer(const GpuInfo& g) {
  return g.architecture == "Hopper" || g.architecture == "Blackwell" || g.architecture == "Rubin";
}

bool dynamic_mig_capable(const GpuInfo& g) {
  if (!g.mig_capable || g.virtualization_mode == kVirtualizationVgpu) return false;
  return hopper_or_newer(g) || g.mig_enabled;
}

std::string counter_set_name(const GpuInfo& g) { return g.canonical_name() + "-counter-set"; }

std::vector<PossibleMigDevice> possible_mig_devices(const GpuInfo& g) {
  std::vector<PossibleMigDevice> out;
  // Every profile in the model has its full-size CI (C == G), and never CI 1_SLICE_REV1.
  for (const auto& p : g.mig_profiles)
    for (const auto& pl : p.placements)
      out.push_back(PossibleMigDevice{mig_device_name(g.minor, p.name, p.gi_profile_id, pl.start), p, pl});
  return out;
}

DriverResources published_gpu_resources(const DeviceModel& model, bool dynamic_mig) {
  if (!dynamic_mig) return DriverResources{published_gpu_devices(model), {}};
  std::vector<const GpuInfo*> gpus;
  for (const auto& g : model.gpus) gpus.push_back(&g);
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo* a, const GpuInfo* b) { return a->pci.bus_id < b->pci.bus_id; });
  DriverResources out;
  for (const auto* g : gpus) {
    const auto first = out.devices.size();
    if (dynamic_mig_capable(*g)) {
      publish_gpu(*g, model.system, out);
    } else {
      DeviceModel one{model.system, {*g}};
      for (auto& d : published_gpu_devices(one)) out.devices.push_back(std::move(d));
    }
    // Upstream publishes each GPU's devices in a slice of their own, GPUs in PCI bus id order.
    for (auto i = first; i < out.devices.size(); ++i) out.devices[i].slice_group = g->pci.bus_id;
  }
  return out;
}

}  // namespace nvdra::nvml
