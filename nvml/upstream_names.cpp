#include "nvml/upstream_names.hpp"

#include <cctype>
#include <cmath>
#include <vector>

namespace nvdra::nvml {

std::string brand_name(unsigned brand) {
  static const char* const kNames[] = {"Unknown",  "Quadro",     "Tesla",     "NVS",        "Grid",
                                       "GeForce",  "Titan",      "NvidiaVApps", "NvidiaVPC", "NvidiaVCS",
                                       "NvidiaVWS", "NvidiaCloudGaming", "QuadroRTX", "NvidiaRTX", "Nvidia",
                                       "GeForceRTX", "TitanRTX"};
  return brand < std::size(kNames) ? kNames[brand] : "Unknown";
}

std::string architecture_name(unsigned arch) {
  switch (arch) {
    case 2: return "Kepler";
    case 3: return "Maxwell";
    case 4: return "Pascal";
    case 5: return "Volta";
    case 6: return "Turing";
    case 7: return "Ampere";
    case 8: return "Ada Lovelace";
    case 9: return "Hopper";
    case 10: return "Blackwell";
    case 13: return "Rubin";
    default: return "Unknown";
  }
}

std::string addressing_mode_name(unsigned mode) {
  switch (mode) {
    case 0: return "None";
    case 1: return "HMM";
    case 2: return "ATS";
    default: return "Unknown";
  }
}

uint64_t mig_memory_gb(uint64_t total, uint64_t mig_mib) {
  if (total == 0) return 0;
  constexpr double kOneMiB = 1024.0 * 1024.0;
  constexpr uint64_t kOneGiB = 1024ULL * 1024 * 1024;
  double frac = static_cast<double>(mig_mib) * kOneMiB / static_cast<double>(total);
  frac = std::ceil(frac * 8) / 8;
  const double total_gb = static_cast<double>((total + kOneGiB - 1) / kOneGiB);
  return static_cast<uint64_t>(std::round(frac * total_gb));
}

std::string mig_profile_string(unsigned gi_index, unsigned gi_slices, unsigned ci_slices, uint64_t memory_mib,
                               uint64_t total) {
  std::string out;
  if (ci_slices != gi_slices) out = std::to_string(ci_slices) + "c.";
  out += std::to_string(gi_slices) + "g." + std::to_string(mig_memory_gb(total, memory_mib)) + "gb";
  switch (gi_index) {
    case 0x7: case 0x8: return out + "+me";           // *_SLICE_REV1: with media extensions
    case 0xA: case 0xB: case 0xC: return out + "+gfx";
    case 0xD: case 0xE: return out + "-me";
    case 0xF: case 0x10: return out + "+me.all";
    default: return out;
  }
}

std::string mig_name_component(const std::string& profile) {
  std::string s;
  for (char c : profile) {
    if (c == '.') continue;
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s += (std::isalnum(static_cast<unsigned char>(l)) || l == '-' || l == '.') ? l : '-';
  }
  while (!s.empty() && s.front() == '-') s.erase(s.begin());
  while (!s.empty() && s.back() == '-') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s.size() > 253) s.resize(253);
  return s;
}

std::string gpu_device_name(unsigned minor) { return "gpu-" + std::to_string(minor); }

std::string mig_device_name(unsigned parent_minor, const std::string& profile, unsigned gi_profile_id,
                            unsigned placement_start) {
  return "gpu-" + std::to_string(parent_minor) + "-mig-" + mig_name_component(profile) + "-" +
         std::to_string(gi_profile_id) + "-" + std::to_string(placement_start);
}

std::string normalize_bus_id(const std::string& id) {
  std::string s;
  for (char c : id) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto colon = s.find(':');
  if (colon == 8 && s.compare(0, 4, "0000") == 0) s.erase(0, 4);
  return s;
}

std::string semver(const std::string& text) {
  std::vector<unsigned long> parts;
  size_t i = 0;
  if (!text.empty() && (text[0] == 'v' || text[0] == 'V')) i = 1;
  while (i < text.size() && parts.size() < 3) {
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j - i > 18) return "";
    parts.push_back(std::stoul(text.substr(i, j - i)));
    if (j == text.size()) break;
    if (text[j] != '.') return "";
    i = j + 1;
    if (i == text.size()) return "";
  }
  if (parts.empty()) return "";
  while (parts.size() < 3) parts.push_back(0);
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
}

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string binary_si(uint64_t value) {
  static const char* const kSuffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  size_t k = 0;
  while (value != 0 && value % 1024 == 0 && k + 1 < std::size(kSuffix)) {
    value /= 1024;
    ++k;
  }
  return std::to_string(value) + kSuffix[k];
}

}  // namespace nvdra::nvml
