#pragma once
// A parser for glibc's ld.so.cache, format "glibc-ld.so.cache1.1" (glibc sysdeps/generic/dl-cache.h),
// standalone or after the legacy "ld.so-1.7.0" table. Driver discovery reads the driver root's
// cache to find libraries the way the dynamic loader would. The input is untrusted: every offset
// and count is bounds-checked, a malformed file is an error, never a crash (fuzzed:
// test/cdi/fuzz/ld_so_cache_fuzz.cpp). Pure; thread-safe.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::cdi {

struct LdCacheEntry {
  std::string name;  // the key, usually a SONAME: "libcuda.so.1"
  std::string path;  // the value: "/usr/lib/x86_64-linux-gnu/libcuda.so.1" (inside the root)
  int32_t flags = 0;
  uint64_t hwcap = 0;
  bool operator==(const LdCacheEntry&) const = default;
};

// Entry flags (dl-cache.h): type in the low byte, architecture requirement in the next.
inline constexpr int32_t kLdFlagElfLibc6 = 0x0003;
inline constexpr int32_t kLdFlagTypeMask = 0x00ff;
inline constexpr int32_t kLdFlagRequiredMask = 0xff00;
inline constexpr int32_t kLdFlagX8664Lib64 = 0x0300;
inline constexpr int32_t kLdFlagAArch64Lib64 = 0x0a00;

// The architecture flag of libraries this build can load (0x0300 on x86-64, 0x0a00 on arm64).
int32_t native_ld_arch_flag();

inline constexpr size_t kMaxLdCacheBytes = 64u << 20;

Result<std::vector<LdCacheEntry>> parse_ld_so_cache(std::span<const uint8_t> data);
// Reads and parses a file; a missing file is kNotFound.
Result<std::vector<LdCacheEntry>> read_ld_so_cache(const std::string& path);

}  // namespace nvdra::cdi
