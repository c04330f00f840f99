// VfioStep over the in-memory kernel: the order of the sysfs writes, the busy-GPU deadline and its
// message, a refused bind, NVML kept off the GPUs during the unbind, give-back and NVML rediscovery,
// the CDI edits per IOMMU backend, and the twin rules.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include "agent/claims/claim/prepared_claim.hpp"
#include "agent/claims/vfio/vfio_step.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "test/claims/fake_pci_binder.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::claims {
namespace {

using namespace std::chrono_literals;
using nvdra::testing::run_awaitable;

constexpr const char* kGpu = "0000:18:00.0";
constexpr const char* kAudio = "0000:18:00.1";

class VfioStepTest : public ::testing::Test {
 protected:
  VfioStepTest() {
    kernel.drivers = {{kGpu, "nvidia"}, {kAudio, "snd_hda_intel"}};
    kernel.defaults = {{kGpu, "nvidia"}, {kAudio, "snd_hda_intel"}};
    device.name = "gpu-vfio-0";
    device.type = DeviceType::kVfio;
    device.pci_bus_id = kGpu;
    device.iommu_group = 10;
    device.group_functions = {kAudio};
    device.minor = 3;
    device.has_minor = true;
    options.busy_deadline = 50ms;
    options.busy_poll = 5ms;
    options.bind_deadline = 50ms;
    options.bind_poll = 1ms;
  }

  VfioStep step() { return VfioStep(pool, kernel, options); }

  boost::asio::io_context io;
  runtime::WorkerPool pool{2};
  testing::FakePciBinder kernel;
  VfioStepOptions options;
  InventoryDevice device;
};

TEST_F(VfioStepTest, HandOverUnbindsOverridesProbesAndTakesTheCardsOtherFunctions) {
  auto s = step();
  auto cdev = run_awaitable(io, s.hand_over(device));
  ASSERT_TRUE(cdev) << cdev.error().describe();
  EXPECT_EQ(*cdev, "vfio7");
  EXPECT_EQ(kernel.drivers[kGpu], "vfio-pci");
  EXPECT_EQ(kernel.drivers[kAudio], "vfio-pci");
  EXPECT_EQ(kernel.log, (std::vector<std::string>{"unbind 0000:18:00.0 nvidia", "unbind 0000:18:00.1 snd_hda_intel",
                                                  "override 0000:18:00.1 vfio-pci", "probe 0000:18:00.1",
                                                  "override 0000:18:00.0 vfio-pci", "probe 0000:18:00.0"}));
}

TEST_F(VfioStepTest, AGpuAlreadyOnVfioPciIsNotRebound) {
  kernel.drivers = {{kGpu, "vfio-pci"}, {kAudio, "vfio-pci"}};
  auto s = step();
  ASSERT_TRUE(run_awaitable(io, s.hand_over(device)));
  EXPECT_TRUE(kernel.log.empty());
}

TEST_F(VfioStepTest, OnAnIommufdHostTheCdevThatFollowsTheBindIsWaitedFor) {
  options.iommufd = true;
  kernel.cdev_late = 3;
  auto s = step();
  auto cdev = run_awaitable(io, s.hand_over(device));
  ASSERT_TRUE(cdev) << cdev.error().message;
  EXPECT_EQ(*cdev, "vfio7");
  EXPECT_EQ(kernel.cdev_reads, 4);
  options.iommufd = false;  // a host without iommufd reads once and takes the answer
  kernel.cdev_late = 1;
  kernel.cdev_reads = 0;
  auto legacy = step();
  EXPECT_EQ(*run_awaitable(io, legacy.hand_over(device)), "");
  EXPECT_EQ(kernel.cdev_reads, 1);
}

TEST_F(VfioStepTest, ABusyGpuFailsAfterTheDeadlineNamingItsHoldersAndStaysOnNvidia) {
  kernel.busy[3] = {GpuHolder{4242, "cuda-app"}, GpuHolder{17, "dcgm-exporter"}};
  auto s = step();
  auto r = run_awaitable(io, s.hand_over(device));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "GPU 0000:18:00.0 (gpu-vfio-0, /dev/nvidia3) is still in use by pid 4242 (cuda-app), pid 17 "
            "(dcgm-exporter) at the end of the claim's 0.0s wait for its GPUs to be free; stop them (or the host "
            "service that runs them) and retry");
  EXPECT_EQ(kernel.drivers[kGpu], "nvidia");
  EXPECT_TRUE(kernel.log.empty());
}

TEST_F(VfioStepTest, ABlindBusyCheckFailsAtOnceAndTheGpuStaysOnNvidia) {
  // Issue #30: not seeing the host's processes is never taken for "no holders".
  options.busy_deadline = std::chrono::hours(1);
  kernel.blind = make_error(ErrorCode::kFailedPrecondition, "cannot tell which host processes have the GPU open");
  auto s = step();
  auto r = run_awaitable(io, s.hand_over(device));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(r.error().message, "GPU 0000:18:00.0 (gpu-vfio-0, /dev/nvidia3) stays on nvidia: cannot tell which host "
                               "processes have the GPU open");
  EXPECT_EQ(kernel.holder_reads, 1);
  EXPECT_EQ(kernel.drivers[kGpu], "nvidia");
  EXPECT_TRUE(kernel.log.empty());
}

TEST_F(VfioStepTest, TheBusyWaitEndsAtTheClaimsDeadlineNotOnePerGpu) {
  // A GPU handed over late in a claim gets what is left of the claim's wait, not a wait of its own:
  // past the claim's deadline one look at its holders decides.
  options.busy_deadline = std::chrono::hours(1);
  kernel.busy[3] = {GpuHolder{4242, "cuda-app"}};
  auto s = step();
  const auto deadline = std::chrono::steady_clock::now() - 1ms;
  auto r = run_awaitable(io, s.hand_over(device, deadline));
  ASSERT_FALSE(r);
  EXPECT_EQ(kernel.holder_reads, 1);
  EXPECT_NE(r.error().message.find("pid 4242 (cuda-app) at the end of the claim's 3600s wait"), std::string::npos)
      << r.error().message;
}

TEST_F(VfioStepTest, TheAgentsOwnNvmlSessionLetsGoOfTheGpuBeforeTheUnbind) {
  kernel.self_held = {3};
  nvml::CallGate gate;
  options.release_gpus = [&](const std::string& why) {
    std::lock_guard lock(kernel.mu);
    kernel.log.push_back("release");
    kernel.self_held.clear();
    return gate.shut(why);
  };
  auto s = step();
  ASSERT_TRUE(run_awaitable(io, s.hand_over(device)));
  ASSERT_GE(kernel.log.size(), 2u);
  EXPECT_EQ(kernel.log[0], "release");
  EXPECT_EQ(kernel.log[1], "unbind 0000:18:00.0 nvidia");
}

TEST_F(VfioStepTest, NoNvmlCallAttachesAGpuFromTheReleaseUntilTheGpuHasLeftNvidia) {
  // Another thread's lookup (the clique re-read, another claim's rediscovery) would open the GPU
  // again between the release and the unbind, and the kernel's unbind would wait for the agent.
  nvml::CallGate gate;
  options.release_gpus = [&](const std::string& why) { return gate.shut(why); };
  std::map<std::string, std::string> refused;  // entry -> what a lookup was told while it was made
  kernel.on_write = [&](const std::string& entry) {
    auto pass = gate.enter("GPU GPU-1");
    refused[entry] = pass ? "" : pass.error().message;
  };
  auto s = step();
  ASSERT_TRUE(run_awaitable(io, s.hand_over(device)));
  EXPECT_EQ(refused.at("unbind 0000:18:00.0 nvidia"),
            "NVML is not asked about GPU GPU-1 now: GPU 0000:18:00.0 (gpu-vfio-0) is being handed to vfio-pci (a "
            "lookup would open the GPU again and hold up the unbind)");
  // Once the GPU has left nvidia, NVML may be asked again (before vfio-pci is bound).
  EXPECT_EQ(refused.at("override 0000:18:00.0 vfio-pci"), "");
  EXPECT_TRUE(gate.enter("GPU GPU-1"));
}

TEST_F(VfioStepTest, AGpuTheAgentStillHoldsIsNotUnbound) {
  // The unbind would wait in the kernel for this very process: the claim fails instead.
  kernel.self_held = {3};
  nvml::CallGate gate;
  options.release_gpus = [&](const std::string& why) { return gate.shut(why); };
  auto s = step();
  auto r = run_awaitable(io, s.hand_over(device));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("GPU 0000:18:00.0 (gpu-vfio-0, /dev/nvidia3) is still open in this agent"),
            std::string::npos)
      << r.error().message;
  EXPECT_TRUE(kernel.log.empty());
  EXPECT_EQ(kernel.drivers[kGpu], "nvidia");
  EXPECT_TRUE(gate.enter("GPU GPU-1")) << "a failed hand-over lets NVML be asked again";
}

TEST_F(VfioStepTest, PersistenceIsTurnedOffWhilePersistencedRunsAndOnWhenTheGpuIsBack) {
  const std::string socket = ::testing::TempDir() + "/vfio-step-persistenced.socket";
  std::remove(socket.c_str());
  options.persistenced_socket = socket;
  options.disable_persistence = [&](const std::string& address) {
    std::lock_guard lock(kernel.mu);
    kernel.log.push_back("pm 0 " + address);
    return Status{};
  };
  {  // nvidia-persistenced is not running (no socket): nothing to ask, as upstream
    auto s = step();
    ASSERT_TRUE(run_awaitable(io, s.hand_over(device)));
    EXPECT_EQ(kernel.log.at(0), "unbind 0000:18:00.0 nvidia");
  }
  kernel.drivers = {{kGpu, "nvidia"}, {kAudio, "snd_hda_intel"}};
  kernel.overrides.clear();
  kernel.log.clear();
  std::ofstream(socket) << "";
  {
    auto s = step();
    ASSERT_TRUE(run_awaitable(io, s.hand_over(device)));
    EXPECT_EQ(kernel.log.at(0), "pm 0 0000:18:00.0");
    EXPECT_EQ(kernel.log.at(1), "unbind 0000:18:00.0 nvidia");
  }
  std::remove(socket.c_str());
  // Back on nvidia: persistence on through NVML, for the GPU NVML now sees at that address.
  std::vector<std::string> enabled;
  options.rediscover = [&](const std::string&) -> Result<std::optional<nvml::DeviceModel>> {
    nvml::DeviceModel m;
    nvml::GpuInfo g;
    g.uuid = "GPU-back";
    g.pci.bus_id = "00000000:18:00.0";
    m.gpus.push_back(g);
    return std::optional(m);
  };
  options.enable_persistence = [&](const std::string& uuid) {
    enabled.push_back(uuid);
    return Status{};
  };
  auto s = step();
  ASSERT_TRUE(run_awaitable(io, s.give_back(device)));
  EXPECT_EQ(enabled, (std::vector<std::string>{"GPU-back"}));
  options.enable_persistence = [](const std::string&) { return make_error(ErrorCode::kInternal, "no"); };
  auto failing = step();
  auto r = run_awaitable(io, failing.give_back(device));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "error enabling persistence mode for GPU 0000:18:00.0 (gpu-vfio-0): no");
}

TEST_F(VfioStepTest, ARefusedUnbindIsAnErrorNamingTheDriverItKept) {
  kernel.refused.insert(kGpu);
  auto s = step();
  auto r = run_awaitable(io, s.hand_over(device));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("GPU 0000:18:00.0 is bound to nvidia, not none"), std::string::npos)
      << r.error().message;
}

TEST_F(VfioStepTest, AGpuOnAnotherDriverIsRefused) {
  kernel.drivers[kGpu] = "nouveau";
  auto s = step();
  auto r = run_awaitable(io, s.hand_over(device));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "GPU 0000:18:00.0 (gpu-vfio-0) is bound to driver nouveau, expected nvidia or vfio-pci");
}

TEST_F(VfioStepTest, GiveBackClearsTheOverrideAndWaitsUntilNvmlSeesTheGpu) {
  kernel.drivers = {{kGpu, ""}, {kAudio, "vfio-pci"}};  // as a crash between unbind and bind left it
  kernel.overrides = {{kGpu, "vfio-pci"}, {kAudio, "vfio-pci"}};
  int asked = 0;
  std::optional<nvml::DeviceModel> seen;
  options.rediscover = [&](const std::string& address) -> Result<std::optional<nvml::DeviceModel>> {
    EXPECT_EQ(address, kGpu);
    if (++asked < 3) return std::optional<nvml::DeviceModel>();  // NVML needs a moment
    return std::optional(nvml::DeviceModel{});
  };
  options.on_gpu_back = [&](const nvml::DeviceModel& m) { seen = m; };
  auto s = step();
  ASSERT_TRUE(run_awaitable(io, s.give_back(device)));
  EXPECT_EQ(kernel.drivers[kGpu], "nvidia");
  EXPECT_EQ(kernel.drivers[kAudio], "snd_hda_intel");
  EXPECT_EQ(asked, 3);
  EXPECT_TRUE(seen.has_value());
}

TEST_F(VfioStepTest, GiveBackAsksNvmlAgainAfterATransientErrorAndNotAfterAnotherOne) {
  kernel.drivers = {{kGpu, ""}, {kAudio, "vfio-pci"}};
  int asked = 0;
  options.rediscover = [&](const std::string&) -> Result<std::optional<nvml::DeviceModel>> {
    // Another claim's GPU is leaving nvidia: NVML is kept off the GPUs for a moment.
    if (++asked < 3) return make_error(ErrorCode::kUnavailable, "NVML is not asked about GPU index 0 now");
    return std::optional(nvml::DeviceModel{});
  };
  auto s = step();
  ASSERT_TRUE(run_awaitable(io, s.give_back(device)));
  EXPECT_EQ(asked, 3);

  kernel.drivers = {{kGpu, ""}, {kAudio, "vfio-pci"}};
  asked = 0;
  options.rediscover = [&](const std::string&) -> Result<std::optional<nvml::DeviceModel>> {
    ++asked;
    return make_error(ErrorCode::kInternal, "nvmlDeviceGetCount_v2(): Unknown Error");
  };
  auto failing = step();
  auto r = run_awaitable(io, failing.give_back(device));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "nvmlDeviceGetCount_v2(): Unknown Error");
  EXPECT_EQ(asked, 1);

  kernel.drivers = {{kGpu, ""}, {kAudio, "vfio-pci"}};
  options.rediscover = [&](const std::string&) -> Result<std::optional<nvml::DeviceModel>> {
    return make_error(ErrorCode::kUnavailable, "NVML is not asked about GPU index 0 now");
  };
  auto never = step();
  r = run_awaitable(io, never.give_back(device));  // until the bind deadline (50 ms here), then the cause
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "NVML is not asked about GPU index 0 now");
}

TEST_F(VfioStepTest, CdiEditsFollowTheIommuBackend) {
  auto legacy = step();
  VfioDeviceConfig prefer{IommuConfig{"PreferIommuFD", true}};
  EXPECT_EQ(legacy.claim_edits(prefer).device_nodes[0].path, "/dev/vfio/vfio");  // no /dev/iommu on the host
  EXPECT_EQ(legacy.device_edits(device, prefer, "vfio7")->device_nodes[0].path, "/dev/vfio/10");
  EXPECT_EQ(legacy.claim_edits(prefer).env, (std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"}));
  EXPECT_EQ(legacy.claim_edits(VfioDeviceConfig{IommuConfig{"LegacyOnly", true}}).device_nodes[0].path,
            "/dev/vfio/vfio");
  // Upstream: no API device unless enableAPIDevice asks for one, whatever the backend.
  for (const auto& c : {VfioDeviceConfig{}, VfioDeviceConfig{IommuConfig{"LegacyOnly", false}},
                        VfioDeviceConfig{IommuConfig{"PreferIommuFD", false}}}) {
    EXPECT_TRUE(legacy.claim_edits(c).device_nodes.empty());
    EXPECT_EQ(legacy.claim_edits(c).env, (std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"}));
  }
  options.iommufd = true;
  auto fd = step();
  EXPECT_EQ(fd.claim_edits(prefer).device_nodes[0].path, "/dev/iommu");
  EXPECT_EQ(fd.claim_edits(VfioDeviceConfig{IommuConfig{"LegacyOnly", true}}).device_nodes[0].path, "/dev/vfio/vfio");
  EXPECT_TRUE(fd.claim_edits(VfioDeviceConfig{IommuConfig{"PreferIommuFD", false}}).device_nodes.empty());
  EXPECT_EQ(fd.device_edits(device, prefer, "vfio7")->device_nodes[0].path, "/dev/vfio/devices/vfio7");
  EXPECT_EQ(fd.device_edits(device, VfioDeviceConfig{IommuConfig{"LegacyOnly", false}}, "vfio7")->device_nodes[0].path,
            "/dev/vfio/10");
  auto missing = fd.device_edits(device, prefer, "");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("missing iommufd cdev for GPU 0000:18:00.0"), std::string::npos);
}

TEST(VfioTwins, APreparedFaceWithdrawsAndRefusesTheOther) {
  nvml::DeviceModel model;
  nvml::GpuInfo g;
  g.uuid = "GPU-1";
  g.minor = 0;
  g.pci.bus_id = "00000000:18:00.0";
  model.gpus.push_back(g);
  GpuInventory inventory(model);
  nvml::PciGpu p;
  p.address = "0000:18:00.0";
  p.iommu_group = 10;
  inventory.add_vfio({p}, model);
  ASSERT_NE(inventory.find("gpu-vfio-0"), nullptr);
  EXPECT_EQ(inventory.find("gpu-vfio-0")->twin, "gpu-0");
  EXPECT_EQ(inventory.find("gpu-0")->twin, "gpu-vfio-0");

  ClaimAllocation vm;
  vm.results = {AllocationResult{"vm", "gpu.nvidia.com", "node", "gpu-vfio-0", DeviceType::kVfio}};
  Checkpoint cp;
  cp.claims["uid-vm"] = CheckpointedClaim{ClaimState::kPrepareStarted, encode_claim_status(vm), {}, "vm", "ns", {}};
  EXPECT_EQ(withdrawn_twins(cp, inventory), (std::vector<std::string>{"gpu-0"}));
  std::vector<AllocationResult> pod = {AllocationResult{"gpu", "gpu.nvidia.com", "node", "gpu-0", DeviceType::kGpu}};
  auto refused = check_twins_free(cp, "uid-pod", pod, inventory);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "requested device gpu-0 is the same GPU as gpu-vfio-0, which is already allocated to different claim uid-vm");
  EXPECT_TRUE(check_twins_free(cp, "uid-vm", vm.results, inventory));
}

TEST(VfioTwins, AGpuWithMigEnabledHasNoVfioTwin) {
  nvml::DeviceModel model;
  nvml::GpuInfo g;
  g.pci.bus_id = "00000000:18:00.0";
  g.mig_enabled = true;
  model.gpus.push_back(g);
  GpuInventory inventory(model);
  nvml::PciGpu p;
  p.address = "0000:18:00.0";
  inventory.add_vfio({p}, model);
  EXPECT_EQ(inventory.find("gpu-vfio-0"), nullptr);
}

TEST(PreparedVfio, RoundTripsInUpstreamsShape) {
  PreparedGroup g;
  PreparedEntry e;
  e.type = DeviceType::kVfio;
  e.uuid = "8533fd84-02c8-5350-bd10-3cf08fc7bcd0";
  e.pci_bus_id = "0000:65:00.0";
  e.requests = {"vm"};
  e.pool = "node";
  e.device = "gpu-vfio-0";
  e.cdi_device_ids = {"k8s.gpu.nvidia.com/claim=u-gpu-vfio-0"};
  g.devices.push_back(e);
  auto json = encode_prepared_groups({g});
  EXPECT_EQ(boost::json::serialize(json),
            R"([{"devices":[{"gpu":null,"mig":null,"vfio":{"info":{"uuid":"8533fd84-02c8-5350-bd10-3cf08fc7bcd0",)"
            R"("pciBusID":"0000:65:00.0"},"device":{"Requests":["vm"],"PoolName":"node","DeviceName":"gpu-vfio-0",)"
            R"("CDIDeviceIDs":["k8s.gpu.nvidia.com/claim=u-gpu-vfio-0"]}}}],"configState":{}}])");
  auto back = decode_prepared_groups(json, "c");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->at(0), g);
}

}  // namespace
}  // namespace nvdra::claims
