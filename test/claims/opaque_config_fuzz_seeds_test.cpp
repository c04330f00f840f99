// Runs the fuzz target over its seed corpus, so the seeds stay valid inputs of the current
// decoder and the target's invariants are checked in every build (not only with NVDRA_FUZZ=ON).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(OpaqueConfigFuzzSeeds, EverySeedRunsWithoutCrashing) {
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(NVDRA_CLAIMS_FUZZ_CORPUS)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0) << e.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 8) << "the corpus in test/claims/fuzz/corpus is missing";
}

}  // namespace
