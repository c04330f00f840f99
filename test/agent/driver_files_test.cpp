// DiscoveredGpus::driver_files: the two drivers share one walk of the driver root for CDI, found
// again when the roots differ or the driver under them changed (libcuda.so.1 moved).
#include <gtest/gtest.h>

#include "agent/drivers/node_gpus.hpp"
#include "test/cdi/fake_driver_root.hpp"

namespace nvdra::drivers {
namespace {

TEST(DriverFiles, OneDiscoveryServesBothDriversUntilTheRootsOrTheDriverChange) {
  cdi::testing::FakeDriverRoot fake;
  DiscoveredGpus gpus;
  auto gpu_driver = gpus.driver_files(fake.roots());
  auto compute_domain = gpus.driver_files(fake.roots());
  ASSERT_TRUE(gpu_driver && compute_domain);
  EXPECT_EQ(gpu_driver->get(), compute_domain->get()) << "the second driver walked the root again";
  EXPECT_EQ((*gpu_driver)->version, "580.95.05");

  auto other_hook = gpus.driver_files(fake.roots("/usr/local/nvidia/toolkit/nvidia-cdi-hook"));
  ASSERT_TRUE(other_hook);
  EXPECT_NE(other_hook->get(), gpu_driver->get());

  fake.upgrade("580.105.08");  // a driver upgraded under the agent, same roots (NVML not asked here)
  auto upgraded = gpus.driver_files(fake.roots("/usr/local/nvidia/toolkit/nvidia-cdi-hook"));
  ASSERT_TRUE(upgraded);
  EXPECT_EQ((*upgraded)->version, "580.105.08");
}

}  // namespace
}  // namespace nvdra::drivers
