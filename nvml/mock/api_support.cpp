#include "nvml/mock/api_support.hpp"

#include <algorithm>

namespace nvdra::nvml::mock {

const GiRecord* find_gi(const GpuState& st, unsigned id) {
  for (const auto& gi : st.gis)
    if (gi.id == id) return &gi;
  return nullptr;
}

const CiRecord* find_ci(const GpuState& st, unsigned gi, unsigned ci) {
  for (const auto& c : st.cis)
    if (c.gi_id == gi && c.id == ci) return &c;
  return nullptr;
}

std::vector<CiRecord> mig_devices_in_order(const GpuState& st) {
  std::vector<CiRecord> out = st.cis;
  std::sort(out.begin(), out.end(),
            [](const CiRecord& a, const CiRecord& b) { return a.gi_id != b.gi_id ? a.gi_id < b.gi_id : a.id < b.id; });
  return out;
}

std::string mig_profile_of(const DeviceView& v) {
  if (v.gi_profile == nullptr || v.ci == nullptr) return "";
  return mig_profile_name(*v.gi_profile, v.ci->size);
}

}  // namespace nvdra::nvml::mock
