// CallGate: calls refused while it is shut (naming why), a shut that waits for the calls already
// inside, and the gate open again once the last shut is dropped.
#include "nvml/call_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace nvdra::nvml {
namespace {

TEST(CallGate, ACallWhileShutIsRefusedNamingWhy) {
  CallGate gate;
  {
    auto shut = gate.shut("GPU 0000:2a:00.0 (gpu-vfio-0) is being handed to vfio-pci");
    auto r = gate.enter("GPU GPU-1");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
    EXPECT_EQ(r.error().message,
              "NVML is not asked about GPU GPU-1 now: GPU 0000:2a:00.0 (gpu-vfio-0) is being handed to vfio-pci (a "
              "lookup would open the GPU again and hold up the unbind)");
  }
  EXPECT_TRUE(gate.enter("GPU GPU-1"));
}

TEST(CallGate, TheGateOpensOnlyOnceEveryShutIsDropped) {
  CallGate gate;
  std::optional<CallGate::Shut> first(gate.shut("first"));
  {
    auto second = gate.shut("second");
    auto r = gate.enter("x");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find(": first ("), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(gate.enter("x")) << "the first shut still holds";
  first.reset();
  EXPECT_TRUE(gate.enter("x"));
  auto again = gate.shut("third");  // a later shut says its own reason
  EXPECT_NE(gate.enter("x").error().message.find(": third ("), std::string::npos);
}

TEST(CallGate, AShutWaitsForTheCallsAlreadyInside) {
  CallGate gate;
  std::optional<CallGate::Pass> inside(std::move(gate.enter("GPU GPU-1")).value());
  std::atomic<bool> shut_returned = false;
  std::optional<CallGate::Shut> held;
  std::thread closer([&] {
    held.emplace(gate.shut("hand-over"));
    shut_returned = true;
  });
  // Wait (with a deadline) until the closer has shut the gate: new calls are refused from then on.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (gate.enter("probe") && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_FALSE(gate.enter("probe")) << "the gate was never shut";
  EXPECT_FALSE(shut_returned) << "the shut returned while a call was still inside";
  inside.reset();
  closer.join();
  EXPECT_TRUE(shut_returned);
  held.reset();
  EXPECT_TRUE(gate.enter("probe"));
}

}  // namespace
}  // namespace nvdra::nvml
