// The sysfs side of PassthroughSupport: which PCI functions are GPUs, in which order, what is
// published about them, and why a GPU whose IOMMU group the host keeps is left out.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nvml/pci_gpus.hpp"

namespace nvdra::nvml {
namespace {

namespace fs = std::filesystem;

class PciTree : public ::testing::Test {
 protected:
  PciTree() : root(fs::temp_directory_path() / ("nvdra-pci-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root);
    fs::create_directories(root / "sys/bus/pci/devices");
  }
  ~PciTree() override { fs::remove_all(root); }

  static void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

  // A function at `bdf` in IOMMU group `group`, bound to `driver` ("" none).
  void add(const std::string& bdf, const std::string& vendor, const std::string& device, const std::string& cls,
           unsigned group, const std::string& driver, const std::string& resource = "") {
    const fs::path dir = root / "sys/devices" / ("pci" + bdf.substr(0, 7)) / bdf;
    write(dir / "vendor", vendor + "\n");
    write(dir / "device", device + "\n");
    write(dir / "class", cls + "\n");
    write(dir / "numa_node", "1\n");
    write(dir / "resource", resource);
    const fs::path g = root / "sys/kernel/iommu_groups" / std::to_string(group) / "devices";
    fs::create_directories(g);
    fs::create_symlink(dir, g / bdf);
    fs::create_symlink(g.parent_path(), dir / "iommu_group");
    if (!driver.empty()) {
      fs::create_directories(root / "sys/bus/pci/drivers" / driver);
      fs::create_symlink(root / "sys/bus/pci/drivers" / driver, dir / "driver");
    }
    fs::create_symlink(fs::relative(dir, root / "sys/bus/pci/devices"), root / "sys/bus/pci/devices" / bdf);
  }

  fs::path root;
};

TEST(VfioUuid, IsUpstreamsUuidV5OfTheAddress) {
  EXPECT_EQ(vfio_uuid("0000:65:00.0"), "8533fd84-02c8-5350-bd10-3cf08fc7bcd0");
  EXPECT_EQ(vfio_device_name(3), "gpu-vfio-3");
}

TEST_F(PciTree, FindsNvidiaGpusInNumericAddressOrderSkippingVfsAndOtherFunctions) {
  add("0000:c1:00.0", "0x10de", "0x2330", "0x030200", 3, "nvidia");
  add("0000:1b:00.0", "0x10de", "0x20b0", "0x030200", 1, "vfio-pci");
  add("0000:1b:00.1", "0x10de", "0x22a3", "0x040300", 1, "snd_hda_intel");  // audio: not a GPU
  add("0000:3a:00.0", "0x8086", "0x1563", "0x020000", 2, "ixgbe");           // not NVIDIA
  add("0000:c1:00.4", "0x10de", "0x2330", "0x030200", 4, "");
  fs::create_symlink("../0000:c1:00.0", root / "sys/devices/pci0000:c1/0000:c1:00.4/physfn");  // an SR-IOV VF
  write(root / "usr/share/misc/pci.ids", "10de  NVIDIA Corporation\n\t2330  GH100 [H100 SXM5 80GB]\n");
  auto gpus = scan_pci_gpus(PciScanOptions{root.string()});
  ASSERT_TRUE(gpus) << gpus.error().describe();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].address, "0000:1b:00.0");
  EXPECT_EQ((*gpus)[0].driver, "vfio-pci");
  EXPECT_EQ((*gpus)[0].product_name, "Device 20b0");  // not in the host's pci.ids: as lspci shows it
  EXPECT_EQ((*gpus)[0].unavailable, "");               // its audio function moves with it
  ASSERT_EQ((*gpus)[0].group_peers.size(), 1u);
  EXPECT_TRUE((*gpus)[0].group_peers[0].same_slot);
  EXPECT_EQ((*gpus)[1].address, "0000:c1:00.0");
  EXPECT_EQ((*gpus)[1].product_name, "GH100 [H100 SXM5 80GB]");
  EXPECT_EQ((*gpus)[1].pcie_root, "pci0000:c1");
  EXPECT_EQ((*gpus)[1].numa_node, 1);
}

TEST_F(PciTree, AGroupSharedWithAForeignDeviceTheHostKeepsMakesTheGpuUnavailable) {
  add("0000:1b:00.0", "0x10de", "0x2330", "0x030200", 7, "nvidia");
  add("0000:1c:00.0", "0x8086", "0x1563", "0x020000", 7, "ixgbe");
  auto gpus = scan_pci_gpus(PciScanOptions{root.string()});
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[0].unavailable,
            "its IOMMU group 7 also holds 0000:1c:00.0 (driver ixgbe), which is not a function of this GPU");
}

TEST_F(PciTree, PublishesUpstreamsVfioAttributesAndAddressableMemory) {
  // BAR0 16 MiB 32-bit (not counted), BAR1 64 GiB and BAR3 32 MiB 64-bit: 64 GiB + 32 MiB -> 128Gi.
  add("0000:65:00.0", "0x10de", "0x2330", "0x030200", 5, "nvidia",
      "0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n"
      "0x0000200000000000 0x0000200fffffffff 0x000000000014220c\n0x0 0x0 0x0\n"
      "0x0000201000000000 0x0000201001ffffff 0x000000000014220c\n");
  auto gpus = scan_pci_gpus(PciScanOptions{root.string()});
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[0].addressable_memory, 128ull << 30);
  auto d = published_vfio((*gpus)[0], 0, true);
  EXPECT_EQ(d.name, "gpu-vfio-0");
  EXPECT_EQ(d.attributes.at("uuid"), AttributeValue(std::string("8533fd84-02c8-5350-bd10-3cf08fc7bcd0")));
  EXPECT_EQ(d.attributes.at("deviceID"), AttributeValue(std::string("0x2330")));
  EXPECT_EQ(d.attributes.at("vendorID"), AttributeValue(std::string("0x10de")));
  EXPECT_EQ(d.attributes.at("iommuFDEnabled"), AttributeValue(true));
  EXPECT_EQ(d.attributes.at("resource.kubernetes.io/pciBusID"), AttributeValue(std::string("0000:65:00.0")));
  EXPECT_EQ(d.capacity.at("addressableMemory"), "128Gi");
}

TEST_F(PciTree, IommuAndIommufdComeFromTheHostRoot) {
  EXPECT_FALSE(iommu_enabled(root.string()));
  EXPECT_FALSE(iommufd_enabled(root.string()));
  add("0000:65:00.0", "0x10de", "0x2330", "0x030200", 5, "nvidia");
  write(root / "dev/iommu", "");
  EXPECT_TRUE(iommu_enabled(root.string()));
  EXPECT_TRUE(iommufd_enabled(root.string()));
}

TEST(PciScan, NoSysfsTreeIsNoGpus) {
  auto gpus = scan_pci_gpus(PciScanOptions{"/nonexistent-nvdra-root"});
  ASSERT_TRUE(gpus);
  EXPECT_TRUE(gpus->empty());
}

}  // namespace
}  // namespace nvdra::nvml
