#include "nvml/pci_gpus.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kNvidiaVendor = 0x10de;
constexpr uint64_t kIoresourceMem = 0x00000200;
constexpr uint64_t kIoresourceMem64 = 0x00100000;

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

uint64_t read_number(const fs::path& p, uint64_t fallback = 0) {
  const std::string s = read_line(p);
  if (s.empty()) return fallback;
  try {
    return std::stoull(s, nullptr, 0);
  } catch (...) {
    return fallback;
  }
}

std::string link_name(const fs::path& p) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(p, ec);
  return ec ? std::string() : target.filename().string();
}

// "0000:65:00.1" -> {domain, bus, device, function}; sort key and slot comparison.
std::array<unsigned, 4> address_key(const std::string& a) {
  std::array<unsigned, 4> k{0, 0, 0, 0};
  std::sscanf(a.c_str(), "%x:%x:%x.%x", &k[0], &k[1], &k[2], &k[3]);
  return k;
}

bool same_slot(const std::string& a, const std::string& b) {
  const auto x = address_key(a), y = address_key(b);
  return x[0] == y[0] && x[1] == y[1] && x[2] == y[2];
}

// readlink /sys/bus/pci/devices/<bdf> -> "../../../devices/pci0000:64/…": the root complex.
std::optional<std::string> pcie_root_of(const fs::path& link) {
  std::error_code ec;
  const std::string s = fs::read_symlink(link, ec).string();
  const auto at = s.find("devices/");
  if (ec || at == std::string::npos) return std::nullopt;
  const std::string root = s.substr(at + 8, s.find('/', at + 8) - (at + 8));
  if (root.rfind("pci", 0) != 0) return std::nullopt;
  return root;
}

uint64_t addressable_memory(const fs::path& dev) {
  std::ifstream in(dev / "resource");
  uint64_t total = 0;
  std::string line;
  for (int bar = 0; bar < 6 && std::getline(in, line); ++bar) {
    uint64_t start = 0, end = 0, flags = 0;
    std::istringstream fields(line);
    fields >> std::hex >> start >> end >> flags;
    if (!fields || start == 0 || end < start) continue;
    if ((flags & kIoresourceMem) && (flags & kIoresourceMem64)) total += end - start + 1;
  }
  uint64_t rounded = 1;
  while (total != 0 && rounded < total) rounded <<= 1;
  return total == 0 ? 0 : rounded;
}

// NVIDIA's device names from the host's pci.ids (the agent ships no database of its own).
std::map<unsigned, std::string> nvidia_names(const std::string& host_root) {
  std::map<unsigned, std::string> out;
  for (const char* rel : {"usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids"}) {
    std::ifstream in(fs::path(host_root) / rel);
    if (!in) continue;
    std::string line;
    bool in_vendor = false;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      if (line[0] != '\t') {
        in_vendor = line.rfind("10de ", 0) == 0;
        continue;
      }
      if (!in_vendor || line.size() < 7 || line[1] == '\t') continue;
      unsigned id = 0;
      if (std::sscanf(line.c_str() + 1, "%x", &id) != 1) continue;
      const auto name = line.find_first_not_of(' ', 5);
      if (name != std::string::npos) out.emplace(id, line.substr(name));
    }
    break;
  }
  return out;
}

char hex_digit(unsigned v) { return "0123456789abcdef"[v & 0xf]; }

std::string hex4(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", v & 0xffff);
  return buf;
}

}  // namespace

bool iommu_enabled(const std::string& host_root) {
  std::error_code ec;
  fs::directory_iterator it(fs::path(host_root) / "sys/kernel/iommu_groups", ec);
  return !ec && it != fs::directory_iterator();
}

bool iommufd_enabled(const std::string& host_root) {
  std::error_code ec;
  return fs::exists(fs::path(host_root) / "dev/iommu", ec);
}

Result<std::vector<PciGpu>> scan_pci_gpus(const PciScanOptions& options) {
  const fs::path devices = fs::path(options.host_root) / "sys/bus/pci/devices";
  std::vector<PciGpu> out;
  std::error_code ec;
  if (!fs::exists(devices, ec)) return out;
  fs::directory_iterator it(devices, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot list " + devices.string() + ": " + ec.message());
  const auto names = nvidia_names(options.host_root);
  for (const auto& entry : it) {
    const fs::path dev = entry.path();
    if (read_number(dev / "vendor") != kNvidiaVendor) continue;
    const auto cls = static_cast<uint32_t>(read_number(dev / "class"));
    if ((cls >> 8) != 0x0300 && (cls >> 8) != 0x0302) continue;  // VGA or 3D controller
    if (fs::exists(dev / "physfn", ec)) continue;                  // an SR-IOV VF
    PciGpu g;
    g.address = dev.filename().string();
    g.device_id = static_cast<unsigned>(read_number(dev / "device"));
    g.driver = link_name(dev / "driver");
    const std::string group = link_name(dev / "iommu_group");
    unsigned group_number = 0;
    if (const auto [end, ec2] = std::from_chars(group.data(), group.data() + group.size(), group_number);
        !group.empty() && ec2 == std::errc() && end == group.data() + group.size())
      g.iommu_group = group_number;
    for (const auto& cdev : fs::directory_iterator(dev / "vfio-dev", ec)) g.iommufd_cdev = cdev.path().filename();
    const auto numa = static_cast<int64_t>(read_number(dev / "numa_node", static_cast<uint64_t>(-1)));
    if (numa >= 0) g.numa_node = numa;
    g.pcie_root = pcie_root_of(dev);
    g.addressable_memory = addressable_memory(dev);
    g.sriov_vfs = static_cast<unsigned>(read_number(dev / "sriov_numvfs"));
    const auto known = names.find(g.device_id);
    g.product_name = known != names.end() ? known->second : "Device " + hex4(g.device_id).substr(2);
    if (g.iommu_group) {
      const fs::path members =
          fs::path(options.host_root) / "sys/kernel/iommu_groups" / std::to_string(*g.iommu_group) / "devices";
      for (const auto& m : fs::directory_iterator(members, ec)) {
        const std::string addr = m.path().filename();
        if (addr == g.address) continue;
        const fs::path peer = devices / addr;
        g.group_peers.push_back(PciFunction{addr, link_name(peer / "driver"),
                                            static_cast<uint32_t>(read_number(peer / "class")),
                                            same_slot(addr, g.address)});
      }
      std::sort(g.group_peers.begin(), g.group_peers.end(),
                [](const auto& a, const auto& b) { return address_key(a.address) < address_key(b.address); });
    }
    if (!g.iommu_group) {
      g.unavailable = "it has no IOMMU group (is the IOMMU on? intel_iommu=on / amd_iommu=on)";
    } else if (g.driver != kNvidiaDriver && g.driver != kVfioPciDriver && !g.driver.empty()) {
      g.unavailable = "it is bound to driver " + g.driver + ", expected nvidia or vfio-pci";
    } else if (g.sriov_vfs > 0) {
      g.unavailable = "it has " + std::to_string(g.sriov_vfs) + " SR-IOV VFs enabled";
    } else {
      // The kernel hands a group to vfio only whole: every other member must be ours to rebind (a
      // function of the same card) or already free of a host driver.
      for (const auto& p : g.group_peers)
        if (!p.same_slot && !p.driver.empty() && p.driver != kVfioPciDriver && p.driver != "pci-stub" &&
            p.driver != "pcieport") {
          g.unavailable = "its IOMMU group " + std::to_string(*g.iommu_group) + " also holds " + p.address +
                          " (driver " + p.driver + "), which is not a function of this GPU";
          break;
        }
    }
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return address_key(a.address) < address_key(b.address); });
  return out;
}

std::string vfio_uuid(const std::string& address) {
  // RFC 4122 DNS namespace 6ba7b810-9dad-11d1-80b4-00c04fd430c8.
  static constexpr unsigned char kDns[16] = {0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
                                             0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr);
  EVP_DigestUpdate(ctx, kDns, sizeof kDns);
  EVP_DigestUpdate(ctx, address.data(), address.size());
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x50);
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex_digit(digest[i] >> 4);
    out += hex_digit(digest[i]);
  }
  return out;
}

std::string vfio_device_name(unsigned index) { return "gpu-vfio-" + std::to_string(index); }

PublishedDevice published_vfio(const PciGpu& g, unsigned index, bool iommufd) {
  PublishedDevice d;
  d.name = vfio_device_name(index);
  d.attributes["type"] = std::string("vfio");
  d.attributes["uuid"] = vfio_uuid(g.address);
  d.attributes["deviceID"] = hex4(g.device_id);
  d.attributes["vendorID"] = hex4(kNvidiaVendor);
  d.attributes["productName"] = g.product_name;
  d.attributes["iommuFDEnabled"] = iommufd;
  d.attributes["resource.kubernetes.io/pciBusID"] = g.address;
  if (g.pcie_root) d.attributes["resource.kubernetes.io/pcieRoot"] = *g.pcie_root;
  if (g.numa_node) d.attributes["resource.kubernetes.io/numaNode"] = *g.numa_node;
  if (g.addressable_memory != 0) d.capacity["addressableMemory"] = binary_si(g.addressable_memory);
  return d;
}

}  // namespace nvdra::nvml
