#include "nvml/device_model.hpp"

#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {

std::string MigDeviceInfo::canonical_name() const {
  return mig_device_name(parent_minor, profile.name, profile.gi_profile_id, placement.start);
}

std::string GpuInfo::canonical_name() const { return gpu_device_name(minor); }

std::string FabricInfo::clique() const {
  if (cluster_uuid.empty()) return "";
  return cluster_uuid + "." + std::to_string(clique_id);
}

}  // namespace nvdra::nvml
