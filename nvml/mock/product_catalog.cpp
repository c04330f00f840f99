#include "nvml/mock/product_catalog.hpp"

#include "nvml/nvml_types.hpp"

namespace nvdra::nvml::mock {
namespace {

constexpr unsigned long long kEccAndXid =
    nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeXidCriticalError;

// The placements every 7-compute-slice / 8-memory-slice GPU in nvml.md §3.2 shares.
GiProfileSpec row(unsigned index, unsigned id, std::string name, unsigned slices, unsigned long long mib, unsigned sm,
                  unsigned ce, unsigned dec, unsigned enc, unsigned jpeg, unsigned ofa, unsigned inst) {
  GiProfileSpec p{index, id, std::move(name), slices, mib, sm, ce, dec, enc, jpeg, ofa, inst, {}, 0};
  switch (id) {
    case 19: case 20: p.placement_starts = {0, 1, 2, 3, 4, 5, 6}; p.placement_size = 1; break;
    case 15: p.placement_starts = {0, 2, 4, 6}; p.placement_size = 2; break;
    case 14: p.placement_starts = {0, 2, 4}; p.placement_size = 2; break;
    case 9: p.placement_starts = {0, 4}; p.placement_size = 4; break;
    case 5: p.placement_starts = {0}; p.placement_size = 4; break;
    case 0: p.placement_starts = {0}; p.placement_size = 8; break;
    default: break;
  }
  return p;
}

std::vector<ProductSpec> build_catalog() {
  std::vector<ProductSpec> out;
  {
    // DGX A100 parts; the 9856/19968/40192 MiB set of one driver release (nvml.md §3.3).
    ProductSpec p;
    p.name = "NVIDIA A100-SXM4-40GB";
    p.architecture = NVML_DEVICE_ARCH_AMPERE;
    p.cc_major = 8; p.cc_minor = 0;
    p.memory_mib = 40960; p.reserved_mib = 518;
    p.pci_device_id = 0x20B010DE; p.pci_subsystem_id = 0x134F10DE;
    p.mig_capable = true;
    p.addressing_mode = NVML_DEVICE_ADDRESSING_MODE_HMM;
    p.supported_events = kEccAndXid;
    p.gi_profiles = {
        row(0, 19, "1g.5gb", 1, 4864, 14, 1, 0, 0, 0, 0, 7),   row(7, 20, "1g.5gb+me", 1, 4864, 14, 1, 1, 0, 1, 1, 1),
        row(9, 15, "1g.10gb", 1, 9856, 14, 1, 1, 0, 0, 0, 4),  row(1, 14, "2g.10gb", 2, 9856, 28, 2, 1, 0, 0, 0, 3),
        row(2, 9, "3g.20gb", 3, 19968, 42, 3, 2, 0, 0, 0, 2),  row(3, 5, "4g.20gb", 4, 19968, 56, 4, 2, 0, 0, 0, 1),
        row(4, 0, "7g.40gb", 7, 40192, 98, 7, 5, 0, 1, 1, 1)};
    out.push_back(std::move(p));
  }
  {
    ProductSpec p;
    p.name = "NVIDIA H100 80GB HBM3";
    p.architecture = NVML_DEVICE_ARCH_HOPPER;
    p.cc_major = 9; p.cc_minor = 0;
    p.memory_mib = 81559; p.reserved_mib = 480;
    p.pci_device_id = 0x233010DE; p.pci_subsystem_id = 0x16C110DE;
    p.mig_capable = true;
    p.fabric_capable = true;
    p.addressing_mode = NVML_DEVICE_ADDRESSING_MODE_HMM;
    p.supported_events = kEccAndXid;
    p.gi_profiles = {
        row(0, 19, "1g.10gb", 1, 9984, 16, 1, 1, 0, 1, 0, 7),  row(7, 20, "1g.10gb+me", 1, 9984, 16, 1, 1, 0, 1, 1, 1),
        row(9, 15, "1g.20gb", 1, 20096, 26, 1, 1, 0, 1, 0, 4), row(1, 14, "2g.20gb", 2, 20096, 32, 2, 2, 0, 2, 0, 3),
        row(2, 9, "3g.40gb", 3, 40448, 60, 3, 3, 0, 3, 0, 2),  row(3, 5, "4g.40gb", 4, 40448, 64, 4, 4, 0, 4, 0, 1),
        row(4, 0, "7g.80gb", 7, 81152, 132, 8, 7, 0, 7, 1, 1)};
    out.push_back(std::move(p));
  }
  {
    ProductSpec p;
    p.name = "NVIDIA GB200";
    p.architecture = NVML_DEVICE_ARCH_BLACKWELL;
    p.cc_major = 10; p.cc_minor = 0;
    p.memory_mib = 189471; p.reserved_mib = 742;
    p.pci_device_id = 0x294110DE; p.pci_subsystem_id = 0x204610DE;
    p.mig_capable = true;
    p.fabric_capable = true;
    p.addressing_mode = NVML_DEVICE_ADDRESSING_MODE_ATS;
    p.supported_events = kEccAndXid;
    // The 3g/4g/7g rows are [unverified] in nvml.md §3.3 beyond their names and counts: memory is
    // chosen to yield the real names (3g.93gb, 4g.93gb, 7g.186gb); SM/engine numbers are placeholders
    // in the B200 guide's proportions. Tests must not assert them.
    p.gi_profiles = {
        row(0, 19, "1g.23gb", 1, 22528, 18, 2, 1, 0, 1, 0, 7), row(7, 20, "1g.23gb+me", 1, 22528, 18, 2, 1, 0, 1, 1, 1),
        row(9, 15, "1g.47gb", 1, 46592, 32, 2, 1, 0, 1, 0, 4), row(1, 14, "2g.47gb", 2, 46592, 38, 4, 2, 0, 2, 0, 3),
        row(2, 9, "3g.93gb", 3, 93184, 60, 6, 3, 0, 3, 0, 2),  row(3, 5, "4g.93gb", 4, 93184, 76, 8, 4, 0, 4, 0, 1),
        row(4, 0, "7g.186gb", 7, 186880, 144, 16, 7, 0, 7, 1, 1)};
    out.push_back(std::move(p));
  }
  {
    ProductSpec p;
    p.name = "NVIDIA L4";
    p.architecture = NVML_DEVICE_ARCH_ADA;
    p.cc_major = 8; p.cc_minor = 9;
    p.memory_mib = 23034; p.reserved_mib = 0;  // L4 reserved memory is [unverified]
    p.pci_device_id = 0x27B810DE; p.pci_subsystem_id = 0x16CA10DE;
    p.addressing_mode = NVML_DEVICE_ADDRESSING_MODE_HMM;
    p.supported_events = kEccAndXid;
    out.push_back(std::move(p));
  }
  return out;
}

const std::vector<ProductSpec>& catalog() {
  static const std::vector<ProductSpec> products = build_catalog();
  return products;
}

}  // namespace

const GiProfileSpec* ProductSpec::profile_by_id(unsigned id) const {
  for (const auto& p : gi_profiles)
    if (p.id == id) return &p;
  return nullptr;
}

const GiProfileSpec* ProductSpec::profile_by_index(unsigned index) const {
  for (const auto& p : gi_profiles)
    if (p.index == index) return &p;
  return nullptr;
}

const GiProfileSpec* ProductSpec::profile_by_name(std::string_view n) const {
  for (const auto& p : gi_profiles)
    if (p.name == n) return &p;
  return nullptr;
}

const ProductSpec* find_product(std::string_view name) {
  for (const auto& p : catalog())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> product_names() {
  std::vector<std::string> out;
  for (const auto& p : catalog()) out.push_back(p.name);
  return out;
}

}  // namespace nvdra::nvml::mock
