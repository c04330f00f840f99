// Slice names as upstream's resourceslice controller (k8s.io/dynamic-resource-allocation v0.36)
// writes and reads them: "<index in hex, ≥5 digits>-<driver>-<node>-" + the API server's suffix.
#include "k8s/slice_names.hpp"

#include <gtest/gtest.h>

namespace nvdra::k8s {
namespace {

TEST(SliceNames, GenerateNameIsTheIndexInLowercaseHexThenDriverThenNode) {
  EXPECT_EQ(slice_generate_name(0, 5, "gpu.nvidia.com", "node1"), "00000-gpu.nvidia.com-node1-");
  EXPECT_EQ(slice_generate_name(26, 5, "compute-domain.nvidia.com", "gpu-node-1"),
            "0001a-compute-domain.nvidia.com-gpu-node-1-");
  EXPECT_EQ(slice_generate_name(0x12345, 6, "gpu.nvidia.com", "n"), "012345-gpu.nvidia.com-n-");
}

TEST(SliceNames, IndexesHaveFiveDigitsUntilThePoolNeedsMore) {
  EXPECT_EQ(slice_index_length(0), 5u);
  EXPECT_EQ(slice_index_length(1), 5u);
  EXPECT_EQ(slice_index_length(0x100000), 5u);  // highest index fffff
  EXPECT_EQ(slice_index_length(0x100001), 6u);  // highest index 100000
}

TEST(SliceNames, AnIndexIsReadBackFromAnyNameItWasWrittenInto) {
  for (std::size_t i : {0u, 1u, 15u, 16u, 255u, 0xfffffu}) {
    const auto name = slice_generate_name(i, 5, "gpu.nvidia.com", "node1") + "x7k2p";
    EXPECT_EQ(decode_slice_index(name, 5), i) << name;
  }
}

TEST(SliceNames, TheIndexSurvivesTheServerCuttingALongPrefix) {
  // The API server keeps only the first 58 characters of a generateName (then adds 5 random ones):
  // with the index first, a long node name costs nothing.
  const std::string node(80, 'n');
  const auto prefix = slice_generate_name(3, 5, "compute-domain.nvidia.com", node);
  EXPECT_EQ(decode_slice_index(prefix.substr(0, 58) + "x7k2p", 5), 3u);
}

TEST(SliceNames, DecodingReadsHexAsGoDoesAndRejectsEverythingElse) {
  EXPECT_EQ(decode_slice_index("0000A-gpu.nvidia.com-node1-abcde", 5), 10u);  // ParseInt takes upper case
  EXPECT_EQ(decode_slice_index("+0001-gpu.nvidia.com-node1-abcde", 5), 1u);   // … and a sign
  EXPECT_EQ(decode_slice_index("00000-gpu.nvidia.com-node1-abcde", 6), std::nullopt);  // length differs
  EXPECT_EQ(decode_slice_index("000000-gpu.nvidia.com-node1-abcde", 5), std::nullopt);
  EXPECT_EQ(decode_slice_index("node1-gpu.nvidia.com-abcde", 5), std::nullopt);  // pre-1.36 names: not hex
  EXPECT_EQ(decode_slice_index("00000", 5), std::nullopt);                       // no separator
  EXPECT_EQ(decode_slice_index("+----", 4), std::nullopt);
  EXPECT_EQ(decode_slice_index("8000000000000000-x", 16), std::nullopt);  // overflows Go's int64
  EXPECT_EQ(decode_slice_index("7fffffffffffffff-x", 16), 0x7fffffffffffffffu);
  // A node whose name is five hex digits gives an old-style name a valid index: a position the
  // pool does not have, so the slice is still replaced (plan_writes checks the range).
  EXPECT_EQ(decode_slice_index("abcde-gpu.nvidia.com-xyz12", 5), 0xabcdeu);
}

}  // namespace
}  // namespace nvdra::k8s
