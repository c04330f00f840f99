#include "nvml/published_devices.hpp"

#include <string>

#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {
namespace {

// Attributes a MIG device copies from its parent (upstream mig.go CommonAttributesMig).
void common_attributes(const GpuInfo& g, const SystemInfo& sys, std::map<std::string, AttributeValue>* out) {
  auto& a = *out;
  a["productName"] = g.product_name;
  a["brand"] = g.brand;
  a["architecture"] = g.architecture;
  a["cudaComputeCapability"] = SemVer{semver(std::to_string(g.cuda_cc_major) + "." + std::to_string(g.cuda_cc_minor))};
  a["driverVersion"] = SemVer{semver(sys.driver_version)};
  a["cudaDriverVersion"] = SemVer{semver(cuda_version(sys.cuda_driver_version))};
  if (g.addressing_mode) a["addressingMode"] = *g.addressing_mode;
  a["resource.kubernetes.io/pciBusID"] = g.pci.bus_id;
  if (g.pcie_root) a["resource.kubernetes.io/pcieRoot"] = *g.pcie_root;
  if (g.numa_node) a["resource.kubernetes.io/numaNode"] = *g.numa_node;
}

// A MIG profile's capacities, the same for an existing MIG device and a DynamicMIG partition.
void profile_capacity(const MigProfileInfo& p, std::map<std::string, std::string>* out) {
  auto& c = *out;
  c["multiprocessors"] = binary_si(p.multiprocessors);
  c["copyEngines"] = binary_si(p.copy_engines);
  c["decoders"] = binary_si(p.decoders);
  c["encoders"] = binary_si(p.encoders);
  c["jpegEngines"] = binary_si(p.jpeg_engines);
  c["ofaEngines"] = binary_si(p.ofa_engines);
  c["memory"] = binary_si(p.memory_mib * 1024 * 1024);
}

}  // namespace

PublishedDevice published_gpu(const GpuInfo& g, const SystemInfo& sys) {
  PublishedDevice d;
  d.name = g.canonical_name();
  d.attributes["type"] = std::string("gpu");
  d.attributes["uuid"] = g.uuid;
  common_attributes(g, sys, &d.attributes);
  if (g.memory_bytes != 0) d.capacity["memory"] = binary_si(g.memory_bytes);
  return d;
}

PublishedDevice published_mig(const MigDeviceInfo& m, const GpuInfo& parent, const SystemInfo& sys) {
  PublishedDevice d;
  d.name = m.canonical_name();
  d.attributes["type"] = std::string("mig");
  d.attributes["uuid"] = m.uuid;
  d.attributes["parentUUID"] = parent.uuid;
  d.attributes["profile"] = m.profile.name;
  common_attributes(parent, sys, &d.attributes);
  const MigProfileInfo& p = m.profile;
  profile_capacity(p, &d.capacity);
  for (unsigned i = m.placement.start; i < m.placement.start + m.placement.size; ++i)
    d.capacity["memorySlice" + std::to_string(i)] = "1";
  return d;
}

PublishedDevice published_dynamic_mig(const GpuInfo& parent, const MigProfileInfo& p, const MigPlacement& placement,
                                      const SystemInfo& sys) {
  PublishedDevice d;
  d.name = mig_device_name(parent.minor, p.name, p.gi_profile_id, placement.start);
  d.attributes["type"] = std::string("mig");
  d.attributes["parentUUID"] = parent.uuid;
  d.attributes["profile"] = p.name;
  common_attributes(parent, sys, &d.attributes);
  profile_capacity(p, &d.capacity);
  return d;
}

std::vector<PublishedDevice> published_gpu_devices(const DeviceModel& model) {
  std::vector<PublishedDevice> out;
  for (const auto& g : model.gpus) {
    if (!g.mig_enabled) {
      out.push_back(published_gpu(g, model.system));
      continue;
    }
    for (const auto& m : g.mig_devices)
      if (m.ci_profile_id == m.profile.ci_profile_id) out.push_back(published_mig(m, g, model.system));
  }
  return out;
}

}  // namespace nvdra::nvml
