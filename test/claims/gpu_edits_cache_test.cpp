// A full GPU's device edits are read from the host once and kept 5 minutes, as upstream keeps
// nvcdi's device specs: a DRM node that appears later is in the edits read after that.
#include "agent/claims/steps/gpu_edits_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "test/claims/temp_dir.hpp"

namespace nvdra::claims {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> paths(const cdi::ContainerEdits& e) {
  std::vector<std::string> out;
  for (const auto& n : e.device_nodes) out.push_back(n.path);
  return out;
}

TEST(GpuEditsCache, KeepsAGpusEditsFiveMinutesThenReadsTheHostAgain) {
  testing::TempDir host;
  const std::string drm = host.path() + "/sys/bus/pci/devices/0000:3b:00.0/drm";
  fs::create_directories(drm + "/card1");
  auto now = GpuEditsCache::Clock::time_point{};
  GpuEditsCache cache([&] { return now; });
  const cdi::HostView view{host.path(), "/"};
  const cdi::GpuDevice gpu{3, "00000000:3B:00.0"};

  EXPECT_FALSE(cache.find(gpu)) << "nothing is kept before a read";
  EXPECT_EQ(paths(cache.read(gpu, view)), (std::vector<std::string>{"/dev/nvidia3", "/dev/dri/card1"}));
  fs::create_directories(drm + "/renderD129");
  now += GpuEditsCache::kKeepFor - std::chrono::seconds(1);
  auto kept = cache.find(gpu);
  ASSERT_TRUE(kept);
  EXPECT_EQ(paths(*kept), (std::vector<std::string>{"/dev/nvidia3", "/dev/dri/card1"}));
  EXPECT_FALSE(cache.find(cdi::GpuDevice{3, "00000000:3C:00.0"})) << "another GPU behind the same minor";
  EXPECT_FALSE(cache.find(cdi::GpuDevice{4, "00000000:3B:00.0"}));

  now += std::chrono::seconds(1);
  EXPECT_FALSE(cache.find(gpu)) << "kept 5 minutes, not longer";
  EXPECT_EQ(paths(cache.read(gpu, view)),
            (std::vector<std::string>{"/dev/nvidia3", "/dev/dri/card1", "/dev/dri/renderD129"}));
  EXPECT_TRUE(cache.find(gpu));
}

}  // namespace
}  // namespace nvdra::claims
