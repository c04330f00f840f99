#pragma once
// Test fixtures: a temp dir, an ld.so.cache writer ("glibc-ld.so.cache1.1", as glibc's ldconfig
// writes it), and a fake NVIDIA installation laid out like a real one: a driver root with
// versioned libraries and their SONAME/dev links, ld.so.cache, binaries, GSP firmware, ICD files
// and an IPC socket, and a host root with device nodes (plain files), /proc/devices, nvidia-caps
// access files and a GPU's DRM nodes in sysfs.
#include <cstdint>
#include <string>
#include <vector>

#include "cdi/driver_discovery.hpp"

namespace nvdra::cdi::testing {

class TempDir {
 public:
  TempDir();
  // Uses `keep_at` (created if missing) and leaves it in place afterwards.
  explicit TempDir(std::string keep_at);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool keep_ = false;
};

struct LdCacheRecord {
  std::string name;
  std::string path;
  int32_t flags;
  uint64_t hwcap = 0;
};

// Serialises records in glibc's new format; with_legacy_table prepends the "ld.so-1.7.0" table.
std::vector<uint8_t> build_ld_so_cache(const std::vector<LdCacheRecord>& records, bool with_legacy_table = false);

void write_file(const std::string& path, std::string_view content);
// A character device node (parents created); a plain empty file when mknod is not permitted.
void make_char_device(const std::string& path, unsigned major, unsigned minor);
void make_symlink(const std::string& target, const std::string& link);

struct FakeDriverOptions {
  std::string version = "580.95.05";
  bool ld_cache = true;          // write <root>/etc/ld.so.cache
  bool absolute_links = false;   // SONAME links as absolute paths inside the root
  bool driver_container = false; // the driver root has its own dev/ (GPU Operator layout)
  bool with_libcuda = true;
  bool char_devices = false;     // device nodes as real character devices (mknod; plain files without CAP_MKNOD)
  std::string keep_at;           // build here and keep it ("" = a temp dir removed afterwards)
};

// Libraries installed as lib<name>.so.<version> with a SONAME link.
struct FakeLibrary {
  std::string name;    // "libcuda.so"
  std::string soname;  // "libcuda.so.1"
};
const std::vector<FakeLibrary>& fake_driver_libraries();

class FakeDriverRoot {
 public:
  explicit FakeDriverRoot(FakeDriverOptions options = {});

  const std::string& driver_root() const { return driver_root_; }
  const std::string& host_root() const { return host_root_; }
  const std::string& lib_dir() const { return lib_dir_; }  // inside the root
  const FakeDriverOptions& options() const { return options_; }
  // Roots as the agent on the host sees them (container root = driver root).
  DriverRoots roots(std::string hook_path = "/usr/bin/nvidia-cdi-hook") const;
  // Replaces the driver by `version` (new files, links repointed, cache rewritten).
  void upgrade(const std::string& version);

 private:
  void install_libraries(const std::string& version);
  void write_cache(const std::string& version);

  TempDir dir_;
  FakeDriverOptions options_;
  std::string driver_root_;
  std::string host_root_;
  std::string lib_dir_;
};

}  // namespace nvdra::cdi::testing
