#pragma once
// Real product facts the mock reports, keyed by NVML product name (../shared/reference/nvml.md §3–4).
// Profiles name a product; everything NVML says about that product comes from here, so a profile
// cannot invent a GPU no one has seen.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nvdra::nvml::mock {

// One row of `nvidia-smi mig -lgip` plus its possible placements (§3.2, §3.3).
struct GiProfileSpec {
  unsigned index = 0;  // NVML_GPU_INSTANCE_PROFILE_* (the argument of GetGpuInstanceProfileInfo)
  unsigned id = 0;     // profile ID (what every later call takes)
  std::string name;    // "1g.5gb", "1g.5gb+me"
  unsigned slice_count = 0;
  unsigned long long memory_mib = 0;
  unsigned multiprocessors = 0, copy_engines = 0, decoders = 0, encoders = 0, jpeg = 0, ofa = 0;
  unsigned instance_count = 0;
  std::vector<unsigned> placement_starts;
  unsigned placement_size = 0;  // memory slices
};

struct ProductSpec {
  std::string name;  // nvmlDeviceGetName
  unsigned brand = 14;
  unsigned architecture = 0;
  int cc_major = 0, cc_minor = 0;
  unsigned long long memory_mib = 0;
  unsigned long long reserved_mib = 0;
  unsigned pci_device_id = 0, pci_subsystem_id = 0;
  bool mig_capable = false;
  bool fabric_capable = false;          // fabric query answers (Hopper+); NOT_SUPPORTED otherwise
  unsigned addressing_mode = 0;         // NVML_DEVICE_ADDRESSING_MODE_*
  unsigned long long supported_events = 0;
  std::vector<GiProfileSpec> gi_profiles;

  const GiProfileSpec* profile_by_id(unsigned id) const;
  const GiProfileSpec* profile_by_index(unsigned index) const;
  const GiProfileSpec* profile_by_name(std::string_view name) const;
};

// nullptr for an unknown product.
const ProductSpec* find_product(std::string_view name);
// The names find_product accepts, for error messages.
std::vector<std::string> product_names();

}  // namespace nvdra::nvml::mock
