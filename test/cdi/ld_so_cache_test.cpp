#include "cdi/ld_so_cache.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "test/cdi/fake_driver_root.hpp"
#include "test/support/prerequisite.hpp"


namespace nvdra::cdi {
namespace {

using testing::LdCacheRecord;

const std::vector<LdCacheRecord> kRecords{
    {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", kLdFlagElfLibc6 | kLdFlagX8664Lib64, 0},
    {"libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", kLdFlagElfLibc6, 0},
    {"libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", kLdFlagElfLibc6 | kLdFlagX8664Lib64, 1ull << 62},
};

TEST(LdSoCache, ReadsEveryEntryOfTheNewFormat) {
  auto bytes = testing::build_ld_so_cache(kRecords);
  auto parsed = parse_ld_so_cache(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
  ASSERT_EQ(parsed->size(), 3u);
  for (size_t i = 0; i < kRecords.size(); ++i) {
    EXPECT_EQ((*parsed)[i].name, kRecords[i].name);
    EXPECT_EQ((*parsed)[i].path, kRecords[i].path);
    EXPECT_EQ((*parsed)[i].flags, kRecords[i].flags);
    EXPECT_EQ((*parsed)[i].hwcap, kRecords[i].hwcap);
  }
}

TEST(LdSoCache, ReadsTheNewFormatAfterTheLegacyTable) {
  auto parsed = parse_ld_so_cache(testing::build_ld_so_cache(kRecords, true));
  ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
  EXPECT_EQ(parsed->size(), 3u);
  EXPECT_EQ(parsed->back().path, "/lib/x86_64-linux-gnu/libz.so.1");
}

TEST(LdSoCache, EveryTruncationIsAnErrorNotACrash) {
  auto bytes = testing::build_ld_so_cache(kRecords);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto parsed = parse_ld_so_cache(std::span<const uint8_t>(bytes.data(), n));
    EXPECT_FALSE(parsed.ok()) << "prefix of " << n << " bytes";
  }
}

TEST(LdSoCache, OffsetsOutsideTheFileAndHugeCountsAreRejectedWithAReason) {
  auto bytes = testing::build_ld_so_cache(kRecords);
  auto bad_offset = bytes;
  bad_offset[48 + 8] = 0xff;  // first entry's value offset
  bad_offset[48 + 9] = 0xff;
  auto parsed = parse_ld_so_cache(bad_offset);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("entry 0 value offset"), std::string::npos);
  auto huge = bytes;
  huge[23] = 0x7f;  // nlibs
  parsed = parse_ld_so_cache(huge);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("entry count"), std::string::npos);
  auto wrong_endian = bytes;
  wrong_endian[28] = 3;
  EXPECT_FALSE(parse_ld_so_cache(wrong_endian).ok());
  auto no_nul = bytes;
  no_nul.back() = 'x';
  EXPECT_FALSE(parse_ld_so_cache(no_nul).ok());
}

TEST(LdSoCache, MissingFileIsNotFound) {
  auto parsed = read_ld_so_cache("/nonexistent/ld.so.cache");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, ErrorCode::kNotFound);
}

// glibc's own reader as the oracle: `ldconfig -p` lists the host cache as "name (flags) => path".
TEST(LdSoCache, AgreesWithLdconfigOnTheHostCache) {
  NVDRA_REQUIRE_PREREQUISITE(std::filesystem::exists("/etc/ld.so.cache"), "/etc/ld.so.cache");
  FILE* p = ::popen("ldconfig -p 2>/dev/null || /sbin/ldconfig -p", "r");
  ASSERT_NE(p, nullptr);
  std::set<std::pair<std::string, std::string>> expected;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    auto arrow = s.find(" => ");
    auto paren = s.find(" (");
    if (arrow == std::string::npos || paren == std::string::npos) continue;
    auto name = s.substr(0, paren);
    name.erase(0, name.find_first_not_of(" \t"));
    auto path = s.substr(arrow + 4);
    path.erase(path.find_last_not_of("\n") + 1);
    expected.emplace(name, path);
  }
  ::pclose(p);
  // A host with a cache lists libc at least: nothing read means this reading of ldconfig broke.
  ASSERT_FALSE(expected.empty()) << "no 'name (flags) => path' line read from ldconfig -p";
  auto parsed = read_ld_so_cache("/etc/ld.so.cache");
  ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
  std::set<std::pair<std::string, std::string>> got;
  for (const auto& e : *parsed) got.emplace(e.name, e.path);
  EXPECT_EQ(got, expected);
}

// The fuzz corpus (test/fuzz/corpus/ld_so_cache) holds real ldconfig output, replayed by
// fuzz_seeds_ld_so_cache; here its content is checked.
TEST(LdSoCache, FuzzCorpusHoldsRealLdconfigOutput) {
  // The seeds include real glibc output: at least one must parse with entries.
  auto real = read_ld_so_cache(std::string(NVDRA_CDI_FUZZ_CORPUS) + "/ok-ldconfig-generated.cache");
  ASSERT_TRUE(real.ok()) << real.error().describe();
  EXPECT_FALSE(real->empty());
  auto compat = read_ld_so_cache(std::string(NVDRA_CDI_FUZZ_CORPUS) + "/ok-ldconfig-compat.cache");
  ASSERT_TRUE(compat.ok()) << compat.error().describe();
  EXPECT_EQ(*compat, *real) << "ldconfig -c compat wraps the same entries in the legacy table";
}

}  // namespace
}  // namespace nvdra::cdi
