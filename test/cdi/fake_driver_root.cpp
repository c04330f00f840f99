#include "test/cdi/fake_driver_root.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <tuple>

#include "cdi/ld_so_cache.hpp"

namespace nvdra::cdi::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  auto base = fs::temp_directory_path() / "nvdra-cdi-XXXXXX";
  std::string tmpl = base.string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::TempDir(std::string keep_at) : path_(std::move(keep_at)), keep_(true) { fs::create_directories(path_); }

TempDir::~TempDir() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {
template <class T>
void put(std::vector<uint8_t>& out, size_t at, T v) {
  if (out.size() < at + sizeof v) out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}
}  // namespace

std::vector<uint8_t> build_ld_so_cache(const std::vector<LdCacheRecord>& records, bool with_legacy_table) {
  std::vector<uint8_t> legacy;
  if (with_legacy_table) {
    // Legacy entries are not read by the parser: their string offsets may be anything.
    legacy.assign(16 + 12 * records.size(), 0);
    std::memcpy(legacy.data(), "ld.so-1.7.0", 11);
    put<uint32_t>(legacy, 12, static_cast<uint32_t>(records.size()));
    legacy.resize((legacy.size() + 7) & ~size_t{7});
  }
  std::vector<uint8_t> out(48 + 24 * records.size(), 0);
  std::memcpy(out.data(), "glibc-ld.so.cache1.1", 20);
  put<uint32_t>(out, 20, static_cast<uint32_t>(records.size()));
  put<uint8_t>(out, 28, 2);  // little endian
  std::string strings;
  size_t strings_at = out.size();
  for (size_t i = 0; i < records.size(); ++i) {
    size_t at = 48 + 24 * i;
    put<int32_t>(out, at, records[i].flags);
    put<uint32_t>(out, at + 4, static_cast<uint32_t>(strings_at + strings.size()));
    strings += records[i].name + '\0';
    put<uint32_t>(out, at + 8, static_cast<uint32_t>(strings_at + strings.size()));
    strings += records[i].path + '\0';
    put<uint64_t>(out, at + 16, records[i].hwcap);
  }
  put<uint32_t>(out, 24, static_cast<uint32_t>(strings.size()));
  out.insert(out.end(), strings.begin(), strings.end());
  legacy.insert(legacy.end(), out.begin(), out.end());
  return legacy;
}

void write_file(const std::string& path, std::string_view content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

void make_char_device(const std::string& path, unsigned major, unsigned minor) {
  fs::create_directories(fs::path(path).parent_path());
  std::error_code ec;
  fs::remove(path, ec);
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0) write_file(path, "");
}

void make_symlink(const std::string& target, const std::string& link) {
  fs::create_directories(fs::path(link).parent_path());
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(target, link);
}

const std::vector<FakeLibrary>& fake_driver_libraries() {
  static const std::vector<FakeLibrary> libs{
      {"libcuda.so", "libcuda.so.1"},
      {"libnvidia-ml.so", "libnvidia-ml.so.1"},
      {"libnvidia-ptxjitcompiler.so", "libnvidia-ptxjitcompiler.so.1"},
      {"libnvidia-nvvm.so", "libnvidia-nvvm.so.4"},
      {"libnvidia-gpucomp.so", "libnvidia-gpucomp.so." /* + version: no separate SONAME */},
      {"libcudadebugger.so", "libcudadebugger.so.1"},
      {"libnvidia-opencl.so", "libnvidia-opencl.so.1"},
      {"libnvidia-cfg.so", "libnvidia-cfg.so.1"},
  };
  return libs;
}

FakeDriverRoot::FakeDriverRoot(FakeDriverOptions options)
    : dir_(options.keep_at.empty() ? TempDir() : TempDir(options.keep_at)), options_(std::move(options)) {
  driver_root_ = dir_.path() + "/driver";
  host_root_ = dir_.path() + "/host";
  lib_dir_ = native_ld_arch_flag() == kLdFlagAArch64Lib64 ? "/usr/lib/aarch64-linux-gnu" : "/usr/lib/x86_64-linux-gnu";
  const std::string& r = driver_root_;
  // Not part of the driver: must never be mounted.
  write_file(r + lib_dir_ + "/libz.so.1.2.13", "zlib");
  make_symlink("libz.so.1.2.13", r + lib_dir_ + "/libz.so.1");
  write_file(r + lib_dir_ + "/libcuda.so.470.42.01", "stale driver");  // a leftover of an older driver
  install_libraries(options_.version);
  for (const char* bin : {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
                          "nvidia-cuda-mps-server"}) {
    write_file(r + "/usr/bin/" + bin, "#!/bin/sh\n");
    fs::permissions(r + "/usr/bin/" + bin, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }
  write_file(r + "/etc/vulkan/icd.d/nvidia_icd.json", "{}");
  write_file(r + "/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "{}");
  write_file(r + "/etc/OpenCL/vendors/nvidia.icd", "libnvidia-opencl.so.1\n");
  write_file(r + "/run/nvidia-persistenced/socket", "");
  write_file(r + "/lib/firmware/nvidia/" + options_.version + "/gsp_ga10x.bin", "fw");
  write_file(r + "/lib/firmware/nvidia/" + options_.version + "/gsp_tu10x.bin", "fw");

  const std::string dev = options_.driver_container ? r + "/dev" : host_root_ + "/dev";
  const std::vector<std::tuple<const char*, unsigned, unsigned>> nodes{
      {"nvidiactl", 195, 255}, {"nvidia-uvm", 509, 0}, {"nvidia-uvm-tools", 509, 1},
      {"nvidia-modeset", 195, 254}, {"nvidia0", 195, 0}, {"nvidia1", 195, 1}};
  for (const auto& [node, major, minor] : nodes) {
    if (options_.char_devices) make_char_device(dev + "/" + node, major, minor);
    else write_file(dev + "/" + node, "");
  }
  const std::string& h = host_root_;
  write_file(h + "/proc/devices",
             "Character devices:\n  1 mem\n195 nvidia-frontend\n234 nvidia-caps\n235 nvidia-caps-imex-channels\n"
             "509 nvidia-uvm\n\nBlock devices:\n  8 sd\n234 nvidia-caps-fake-block\n");
  const std::string caps = h + "/proc/driver/nvidia/capabilities/";
  write_file(caps + "gpu0/mig/gi1/access", "DeviceFileMinor: 30\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  write_file(caps + "gpu0/mig/gi1/ci0/access", "DeviceFileMinor: 31\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  write_file(caps + "fabric-imex-mgmt", "DeviceFileMinor: 4096\nDeviceFileMode: 256\nDeviceFileModify: 1\n");
  // gpu1's caps only in the driver's minors table (older drivers, or no capabilities/ dir).
  write_file(h + "/proc/driver/nvidia-caps/mig-minors", "config 1\nmonitor 2\ngpu1/gi2/access 147\ngpu1/gi2/ci1/access 149\n");
  write_file(h + "/sys/bus/pci/devices/0000:3b:00.0/drm/card1/dev", "226:1\n");
  write_file(h + "/sys/bus/pci/devices/0000:3b:00.0/drm/renderD128/dev", "226:128\n");
}

void FakeDriverRoot::install_libraries(const std::string& version) {
  const std::string dir = driver_root_ + lib_dir_;
  for (const auto& lib : fake_driver_libraries()) {
    if (lib.name == "libcuda.so" && !options_.with_libcuda) continue;
    const std::string real = lib.name + "." + version;
    write_file(dir + "/" + real, "ELF " + real);
    if (lib.soname.ends_with(".")) continue;  // the versioned name is the SONAME
    make_symlink(options_.absolute_links ? lib_dir_ + "/" + real : real, dir + "/" + lib.soname);
  }
  if (options_.with_libcuda) make_symlink("libcuda.so.1", dir + "/libcuda.so");  // the dev link
  if (options_.ld_cache) write_cache(version);
}

void FakeDriverRoot::write_cache(const std::string& version) {
  const int32_t flags = kLdFlagElfLibc6 | native_ld_arch_flag();
  std::vector<LdCacheRecord> records;
  for (const auto& lib : fake_driver_libraries()) {
    if (lib.name == "libcuda.so" && !options_.with_libcuda) continue;
    auto soname = lib.soname.ends_with(".") ? lib.soname + version : lib.soname;
    records.push_back({soname, lib_dir_ + "/" + soname, flags});
  }
  records.push_back({"libz.so.1", lib_dir_ + "/libz.so.1", flags});
  records.push_back({"libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", kLdFlagElfLibc6});  // 32-bit: ignored
  auto bytes = build_ld_so_cache(records);
  write_file(driver_root_ + "/etc/ld.so.cache", std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

DriverRoots FakeDriverRoot::roots(std::string hook_path) const {
  return DriverRoots{driver_root_, driver_root_, host_root_, std::move(hook_path)};
}

void FakeDriverRoot::upgrade(const std::string& version) {
  options_.version = version;
  install_libraries(version);
  write_file(driver_root_ + "/lib/firmware/nvidia/" + version + "/gsp_ga10x.bin", "fw");
}

}  // namespace nvdra::cdi::testing
