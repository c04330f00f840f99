#include "nvml/mock/mig_layout.hpp"

#include <algorithm>
#include <set>

namespace nvdra::nvml::mock {
namespace {

bool overlaps(unsigned a_start, unsigned a_size, unsigned b_start, unsigned b_size) {
  return a_start < b_start + b_size && b_start < a_start + a_size;
}

std::string slices(unsigned start, unsigned size) {
  return std::to_string(start) + "-" + std::to_string(start + size - 1);
}

}  // namespace

nvmlReturn_t check_gi_placement(const ProductSpec& product, const std::vector<GiRecord>& existing, unsigned profile_id,
                                unsigned start, std::string* why) {
  const GiProfileSpec* p = product.profile_by_id(profile_id);
  if (p == nullptr) {
    if (why) *why = "profile ID " + std::to_string(profile_id) + " is not offered by " + product.name;
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (std::find(p->placement_starts.begin(), p->placement_starts.end(), start) == p->placement_starts.end()) {
    if (why) {
      std::string allowed;
      for (unsigned s : p->placement_starts) allowed += (allowed.empty() ? "" : ", ") + std::to_string(s);
      *why = p->name + " cannot start at memory slice " + std::to_string(start) + " (allowed: " + allowed + ")";
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned same_profile = 0;
  for (const auto& gi : existing) {
    if (gi.profile_id == profile_id) ++same_profile;
    if (overlaps(start, p->placement_size, gi.start, gi.size)) {
      if (why) {
        const GiProfileSpec* other = product.profile_by_id(gi.profile_id);
        *why = p->name + " at memory slices " + slices(start, p->placement_size) + " overlaps " +
               (other ? other->name : std::string("a GPU instance")) + " at " + slices(gi.start, gi.size);
      }
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
  }
  if (same_profile >= p->instance_count) {
    if (why) *why = p->name + " allows at most " + std::to_string(p->instance_count) + " instance(s)";
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  return NVML_SUCCESS;
}

std::optional<unsigned> first_free_gi_start(const ProductSpec& product, const std::vector<GiRecord>& existing,
                                            unsigned profile_id) {
  const GiProfileSpec* p = product.profile_by_id(profile_id);
  if (p == nullptr) return std::nullopt;
  for (unsigned s : p->placement_starts)
    if (check_gi_placement(product, existing, profile_id, s, nullptr) == NVML_SUCCESS) return s;
  return std::nullopt;
}

unsigned next_gi_id(const std::vector<GiRecord>& existing, const GiProfileSpec& profile) {
  std::set<unsigned> used;
  for (const auto& gi : existing) used.insert(gi.id);
  unsigned id = profile.slice_count == 1 ? 7 : profile.slice_count == 2 ? 3 : 1;
  while (used.count(id)) ++id;
  return id;
}

nvmlReturn_t ci_profile(const GiProfileSpec& gi, unsigned ci_index, CiProfileSpec* out) {
  if (ci_index >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  static constexpr unsigned kSlices[] = {1, 2, 3, 4, 7, 8, 6, 1};
  // REV1 CIs exist only inside REV2 GIs with numbers nvml.md marks unverified; 8/6-slice CIs need
  // GPUs the catalog has none of.
  if (ci_index == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 || ci_index == 5 || ci_index == 6)
    return NVML_ERROR_NOT_SUPPORTED;
  const unsigned c = kSlices[ci_index];
  const unsigned g = gi.slice_count;
  if (c > g || (g == 4 && c == 3)) return NVML_ERROR_NOT_SUPPORTED;
  CiProfileSpec ci;
  ci.id = ci_index;
  ci.slice_count = c;
  ci.instance_count = g / c;
  ci.multiprocessors = c == g ? gi.multiprocessors : gi.multiprocessors * c / g;
  ci.copy_engines = gi.copy_engines;
  ci.decoders = gi.decoders;
  ci.encoders = gi.encoders;
  ci.jpeg = gi.jpeg;
  ci.ofa = gi.ofa;
  for (unsigned s = 0; s + c <= g; s += c) ci.starts.push_back(s);
  if (out) *out = ci;
  return NVML_SUCCESS;
}

nvmlReturn_t check_ci_placement(const CiProfileSpec& ci, const std::vector<CiRecord>& siblings, unsigned start) {
  if (std::find(ci.starts.begin(), ci.starts.end(), start) == ci.starts.end()) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned same = 0;
  for (const auto& other : siblings) {
    if (other.profile_id == ci.id) ++same;
    if (overlaps(start, ci.slice_count, other.start, other.size)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  if (same >= ci.instance_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  return NVML_SUCCESS;
}

std::optional<unsigned> first_free_ci_start(const CiProfileSpec& ci, const std::vector<CiRecord>& siblings) {
  for (unsigned s : ci.starts)
    if (check_ci_placement(ci, siblings, s) == NVML_SUCCESS) return s;
  return std::nullopt;
}

unsigned next_ci_id(const std::vector<CiRecord>& siblings) {
  std::set<unsigned> used;
  for (const auto& ci : siblings) used.insert(ci.id);
  unsigned id = 0;
  while (used.count(id)) ++id;
  return id;
}

std::string mig_profile_name(const GiProfileSpec& gi, unsigned ci_slices) {
  if (ci_slices == gi.slice_count) return gi.name;
  return std::to_string(ci_slices) + "c." + gi.name;
}

}  // namespace nvdra::nvml::mock

namespace nvdra::nvml::mock {
unsigned full_ci_profile_index(unsigned gi_slices) {
  switch (gi_slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    default: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
  }
}
}  // namespace nvdra::nvml::mock
