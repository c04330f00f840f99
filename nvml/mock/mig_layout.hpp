#pragma once
// MIG placement rules of a 7-compute-slice / 8-memory-slice GPU, as NVML enforces them
// (nvml.md §3.2, §3.4): used by the profile validator and by the mock's create calls, so a layout a
// profile may declare is exactly a layout NVML would let you create.
#include <optional>
#include <string>
#include <vector>

#include "nvml/mock/product_catalog.hpp"
#include "nvml/nvml_types.hpp"

namespace nvdra::nvml::mock {

struct GiRecord {
  unsigned id = 0;
  unsigned profile_id = 0;
  unsigned start = 0;  // memory slice
  unsigned size = 0;
};

struct CiRecord {
  unsigned gi_id = 0;
  unsigned id = 0;
  unsigned profile_id = 0;  // = CI profile index
  unsigned start = 0;       // compute slice inside the GI
  unsigned size = 0;
};

// A compute-instance profile as offered inside one GPU instance.
struct CiProfileSpec {
  unsigned id = 0;
  unsigned slice_count = 0;
  unsigned instance_count = 0;
  unsigned multiprocessors = 0, copy_engines = 0, decoders = 0, encoders = 0, jpeg = 0, ofa = 0;
  std::vector<unsigned> starts;
};

// NVML's answer for a GPU-instance creation at `start` given the existing instances: SUCCESS,
// INVALID_ARGUMENT (no such profile / start not a possible placement) or INSUFFICIENT_RESOURCES
// (overlap, or the profile's instance count is used up). `why` gets a sentence for errors.
nvmlReturn_t check_gi_placement(const ProductSpec& product, const std::vector<GiRecord>& existing, unsigned profile_id,
                                unsigned start, std::string* why);

// The first possible placement start that is free, if any.
std::optional<unsigned> first_free_gi_start(const ProductSpec& product, const std::vector<GiRecord>& existing,
                                            unsigned profile_id);

// The GI id the driver hands out: 1g profiles from 7, 2g from 3, larger from 1 (observed ranges,
// nvml.md §3.1 — upstream never infers placement from ids), always unique on the GPU.
unsigned next_gi_id(const std::vector<GiRecord>& existing, const GiProfileSpec& profile);

// The CI profile at `ci_index` inside a GI of `gi`: NOT_SUPPORTED / INVALID_ARGUMENT as NVML does.
nvmlReturn_t ci_profile(const GiProfileSpec& gi, unsigned ci_index, CiProfileSpec* out);

nvmlReturn_t check_ci_placement(const CiProfileSpec& ci, const std::vector<CiRecord>& siblings, unsigned start);
std::optional<unsigned> first_free_ci_start(const CiProfileSpec& ci, const std::vector<CiRecord>& siblings);
unsigned next_ci_id(const std::vector<CiRecord>& siblings);

// "3g.20gb" for a CI spanning its GI, "1c.3g.20gb" for a smaller one.
std::string mig_profile_name(const GiProfileSpec& gi, unsigned ci_slices);

}  // namespace nvdra::nvml::mock

namespace nvdra::nvml::mock {
// The CI profile index of the compute instance that spans a GI of `gi_slices` (nvml.md §3.4).
unsigned full_ci_profile_index(unsigned gi_slices);
}  // namespace nvdra::nvml::mock
