#include "cdi/ld_so_cache.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

namespace nvdra::cdi {
namespace {

constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr std::string_view kNewMagic = "glibc-ld.so.cache";
constexpr std::string_view kNewVersion = "1.1";
constexpr size_t kOldHeader = 16;      // magic[11], pad, uint32 nlibs
constexpr size_t kOldEntry = 12;       // int32 flags, uint32 key, uint32 value
constexpr size_t kNewHeader = 48;      // see struct cache_file_new
constexpr size_t kNewEntry = 24;       // flags, key, value, osversion, uint64 hwcap
constexpr size_t kNewAlign = 8;        // alignof(struct cache_file_new)
constexpr uint8_t kEndianMask = 3, kEndianUnset = 0, kEndianLittle = 2, kEndianBig = 3;

template <class T>
T load(std::span<const uint8_t> data, size_t at) {
  T v;
  std::memcpy(&v, data.data() + at, sizeof v);
  return v;
}

Error malformed(std::string what) {
  return make_error(ErrorCode::kInvalidArgument, "malformed ld.so.cache: " + what);
}

// A NUL-terminated string at `offset` inside `table`.
Result<std::string> string_at(std::span<const uint8_t> table, uint32_t offset, const char* field, size_t index) {
  if (offset >= table.size())
    return malformed("entry " + std::to_string(index) + " " + field + " offset " + std::to_string(offset) +
                     " is past the end (" + std::to_string(table.size()) + " bytes)");
  const auto* begin = reinterpret_cast<const char*>(table.data() + offset);
  const void* nul = std::memchr(begin, 0, table.size() - offset);
  if (nul == nullptr) return malformed("entry " + std::to_string(index) + " " + field + " is not NUL-terminated");
  return std::string(begin, static_cast<const char*>(nul));
}

}  // namespace

int32_t native_ld_arch_flag() {
#if defined(__x86_64__)
  return kLdFlagX8664Lib64;
#elif defined(__aarch64__)
  return kLdFlagAArch64Lib64;
#else
  return 0;
#endif
}

Result<std::vector<LdCacheEntry>> parse_ld_so_cache(std::span<const uint8_t> data) {
  if (data.size() > kMaxLdCacheBytes) return malformed("larger than " + std::to_string(kMaxLdCacheBytes) + " bytes");
  size_t start = 0;
  if (data.size() >= kOldMagic.size() && std::memcmp(data.data(), kOldMagic.data(), kOldMagic.size()) == 0) {
    // Compat layout: the legacy table, then the new format at the next aligned offset.
    if (data.size() < kOldHeader) return malformed("legacy header truncated");
    uint64_t old_n = load<uint32_t>(data, 12);
    uint64_t end = kOldHeader + old_n * kOldEntry;
    if (end > data.size()) return malformed("legacy table of " + std::to_string(old_n) + " entries is truncated");
    start = static_cast<size_t>((end + kNewAlign - 1) & ~uint64_t{kNewAlign - 1});
  }
  if (start > data.size() || data.size() - start < kNewHeader)
    return malformed("no \"glibc-ld.so.cache1.1\" header (legacy-only caches are not supported)");
  auto table = data.subspan(start);  // new-format string offsets are relative to this header
  if (std::memcmp(table.data(), kNewMagic.data(), kNewMagic.size()) != 0)
    return malformed("bad magic, expected \"glibc-ld.so.cache\"");
  if (std::memcmp(table.data() + kNewMagic.size(), kNewVersion.data(), kNewVersion.size()) != 0)
    return malformed("unsupported version, expected \"1.1\"");
  uint8_t endian = load<uint8_t>(table, 28) & kEndianMask;
  const uint8_t native = std::endian::native == std::endian::little ? kEndianLittle : kEndianBig;
  if (endian != kEndianUnset && endian != native)
    return malformed("byte order flag " + std::to_string(endian) + " does not match this machine");
  uint64_t n = load<uint32_t>(table, 20);
  if (n > (table.size() - kNewHeader) / kNewEntry)
    return malformed("entry count " + std::to_string(n) + " does not fit in " + std::to_string(table.size()) +
                     " bytes");
  std::vector<LdCacheEntry> out;
  out.reserve(static_cast<size_t>(n));
  for (size_t i = 0; i < n; ++i) {
    size_t at = kNewHeader + i * kNewEntry;
    LdCacheEntry e;
    e.flags = load<int32_t>(table, at);
    auto key = string_at(table, load<uint32_t>(table, at + 4), "key", i);
    if (!key) return key.error();
    auto value = string_at(table, load<uint32_t>(table, at + 8), "value", i);
    if (!value) return value.error();
    e.name = std::move(*key);
    e.path = std::move(*value);
    e.hwcap = load<uint64_t>(table, at + 16);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<LdCacheEntry>> read_ld_so_cache(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open " + path);
  std::vector<uint8_t> bytes;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    bytes.insert(bytes.end(), buf, buf + in.gcount());
    if (bytes.size() > kMaxLdCacheBytes) break;
  }
  auto parsed = parse_ld_so_cache(bytes);
  if (!parsed) return make_error(parsed.error().code, path + ": " + parsed.error().message);
  return parsed;
}

}  // namespace nvdra::cdi
