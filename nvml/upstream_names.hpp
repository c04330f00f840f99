#pragma once
// How upstream (go-nvlib, the gpu kubelet plugin) spells NVML facts: brand and architecture
// strings, MIG profile strings, device names, PCI bus IDs, versions and quantities. Pure
// functions; unit-tested against upstream-driver.md §1.2 and §2.
#include <cstdint>
#include <string>

namespace nvdra::nvml {

std::string brand_name(unsigned brand);                // 14 -> "Nvidia"
std::string architecture_name(unsigned architecture);  // 8 -> "Ada Lovelace"
std::string addressing_mode_name(unsigned mode);       // 2 -> "ATS"

// go-nvlib getMigMemorySizeGB: memory fraction rounded up to eighths of the GPU's GiB total.
uint64_t mig_memory_gb(uint64_t total_device_bytes, uint64_t mig_memory_mib);
// "<G>g.<GB>gb" plus the attribute suffix the GI profile index implies ("+me", "-me", "+gfx",
// "+me.all"); a "<C>c." prefix when the compute instance is smaller than the GPU instance.
std::string mig_profile_string(unsigned gi_profile_index, unsigned gi_slices, unsigned ci_slices,
                               uint64_t memory_mib, uint64_t total_device_bytes);
// The <profile'> part of a MIG device name: dots removed, then RFC 1123-ised ("1g.10gb+me" -> "1g10gb-me").
std::string mig_name_component(const std::string& profile);
std::string gpu_device_name(unsigned minor);  // "gpu-0"
std::string mig_device_name(unsigned parent_minor, const std::string& profile, unsigned gi_profile_id,
                            unsigned placement_start);  // "gpu-0-mig-1g5gb-19-0"

// NVML busId ("00000008:01:00.0") as upstream publishes it ("0008:01:00.0").
std::string normalize_bus_id(const std::string& nvml_bus_id);
// Masterminds semver coercion: "570.158.01" -> "570.158.1", "8.0" -> "8.0.0"; "" if not a version.
std::string semver(const std::string& text);
// NVML's CUDA integer: 12080 -> "12.8".
std::string cuda_version(int encoded);
// A Kubernetes quantity in canonical BinarySI form: 42949672960 -> "40Gi", 98 -> "98".
std::string binary_si(uint64_t value);

}  // namespace nvdra::nvml
