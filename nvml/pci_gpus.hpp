#pragma once
// The NVIDIA GPUs on the PCI bus, read from sysfs rather than NVML: a GPU bound to vfio-pci (or to
// no driver) is invisible to NVML, yet it is what PassthroughSupport publishes as gpu-vfio-<index>
// (upstream-driver.md §1.2, §2.3: go-nvlib nvpci.GetGPUs). Blocking (directory walks, small reads):
// run on the worker pool. Includes only agent/base.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/device.hpp"
#include "agent/base/result.hpp"

namespace nvdra::nvml {

inline constexpr const char* kVfioPciDriver = "vfio-pci";
inline constexpr const char* kNvidiaDriver = "nvidia";

// Another function in a GPU's IOMMU group (its HDMI audio function, a bridge, a foreign device).
struct PciFunction {
  std::string address;  // "0000:65:00.1"
  std::string driver;   // "" when unbound
  uint32_t class_code = 0;
  bool same_slot = false;  // same domain:bus:device as the GPU (a function of the same card)
};

struct PciGpu {
  std::string address;  // sysfs form, "0000:65:00.0" (also upstream's published pciBusID)
  unsigned device_id = 0;
  std::string driver;   // "nvidia", "vfio-pci", "" (unbound)
  std::optional<unsigned> iommu_group;
  std::string iommufd_cdev;  // "vfio3" when vfio-dev/vfio3 exists (bound to vfio-pci with iommufd)
  std::optional<int64_t> numa_node;
  std::optional<std::string> pcie_root;
  uint64_t addressable_memory = 0;  // sum of 64-bit BARs, rounded up to a power of two
  unsigned sriov_vfs = 0;           // sriov_numvfs
  std::vector<PciFunction> group_peers;  // the other members of its IOMMU group
  std::string product_name;              // from pci.ids; "Device <id>" as lspci when unknown
  // Why the GPU cannot be handed over as a whole IOMMU group; "" when it can.
  std::string unavailable;
};

struct PciScanOptions {
  std::string host_root = "/";  // <host_root>/sys/bus/pci/devices, <host_root>/usr/share/{misc,hwdata}/pci.ids
};

// Every NVIDIA (vendor 0x10de) display-class PCI function that is not an SR-IOV VF, sorted by
// address numerically (domain, bus, device, function), as nvpci.GetGPUs. A missing sysfs tree is
// no GPUs (an empty list); an unreadable one is an error naming the path.
Result<std::vector<PciGpu>> scan_pci_gpus(const PciScanOptions& options);

// Whether the kernel has IOMMU groups (<host_root>/sys/kernel/iommu_groups non-empty).
bool iommu_enabled(const std::string& host_root);
// Whether /dev/iommu exists under host_root (upstream's iommuFDEnabled).
bool iommufd_enabled(const std::string& host_root);

// Upstream's VFIO uuid: UUIDv5 (SHA-1, DNS namespace) of the address text.
std::string vfio_uuid(const std::string& address);
// gpu-vfio-<index>
std::string vfio_device_name(unsigned index);

// The published VFIO device (§2.3): type, uuid, deviceID, vendorID, productName, iommuFDEnabled,
// the standard PCI attributes, capacity addressableMemory.
PublishedDevice published_vfio(const PciGpu& gpu, unsigned index, bool iommufd);

}  // namespace nvdra::nvml
