// DynamicMIG prepare/unprepare on the hgx-h100 mock (real dlopen path): MIG devices created at
// prepare at the allocated placement and destroyed at unprepare, MIG mode toggled on Hopper as
// upstream, busy GPUs, crash repair at start-up (no orphan instances, no orphan CDI files).
#include <dlfcn.h>
#include <gmock/gmock.h>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <atomic>

#include "test/support/run_awaitable.hpp"
#include "agent/claims/claim/prepared_claim.hpp"
#include "test/claims/pipeline_fixture.hpp"

namespace nvdra::claims::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace asio::experimental::awaitable_operators;
using FailNext = int (*)(const char*, int, unsigned);
constexpr const char* kGpu0 = "GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e01";
constexpr const char* kGpu1 = "GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e02";

// Counts what DynamicMIG reports for the metrics page (from pool threads: atomics).
struct MigCounts : metrics::Sink {
  std::atomic<int> created{0}, destroyed{0};
  void mig_device_created() override { ++created; }
  void mig_device_destroyed() override { ++destroyed; }
};

class DynamicMigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_root_ = tmp_.path() + "/host";
    ::setenv("NVDRA_MOCK_PROFILE", "hgx-h100", 1);
    ::setenv("NVDRA_MOCK_STATE_DIR", tmp_.path().c_str(), 1);
    ::setenv("NVDRA_MOCK_HOST_ROOT", host_root_.c_str(), 1);  // the mock keeps the MIG caps files there
    write_file(host_root_ + "/proc/devices", "Character devices:\n195 nvidia\n236 nvidia-caps\n");
    auto lib = nvml::open_nvml(nvml::LoadOptions{NVDRA_MOCK_LIBRARY, "/"});
    ASSERT_TRUE(lib) << lib.error().describe();
    lib_ = std::move(*lib);
    auto model = nvml::discover(*lib_);
    ASSERT_TRUE(model) << model.error().describe();
    inventory_ = std::make_unique<GpuInventory>(*model, /*dynamic_mig=*/true);
    committer_ = std::make_unique<CheckpointCommitter>(io_.get_executor(), pool_, checkpoints_, Checkpoint{});
    handler_ = make_handler();
  }
  void TearDown() override {
    handler_.reset();
    lib_.reset();
    ::unsetenv("NVDRA_MOCK_HOST_ROOT");
  }

  std::unique_ptr<GpuClaimHandler> make_handler() {
    GpuClaimHandlerOptions options;
    options.node_name = "node-a";
    options.driver_root = tmp_.path() + "/driver";
    options.host = cdi::HostView{host_root_, "/"};
    options.gates.time_slicing_settings = true;
    options.mig_library = lib_.get();
    options.metrics = &mig_counts_;
    return std::make_unique<GpuClaimHandler>(pool_, source_, *inventory_, *committer_, specs_, mps_, options);
  }

  kubelet::ClaimRef add_claim(const std::string& name, std::vector<std::string> devices) {
    ClaimAllocation a;
    a.uid = "uid-" + name;
    for (const auto& d : devices) a.results.push_back(AllocationResult{"gpu", "gpu.nvidia.com", "node-a", d});
    source_.claims["default/" + name] = a;
    return kubelet::ClaimRef{"default", name, a.uid};
  }

  // Runs one awaitable on the test's io_context to completion (deadline 30 s).
  template <class T>
  T run(asio::awaitable<T> op) {
    return nvdra::testing::run_awaitable(io_, std::move(op));
  }
  Result<std::vector<kubelet::PreparedDevice>> prepare(const kubelet::ClaimRef& c) { return run(handler_->prepare(c)); }
  Status unprepare(const kubelet::ClaimRef& c) { return run(handler_->unprepare(c)); }
  RecoveryReport recover() {
    return run(handler_->recover());
  }
  std::vector<std::string> instances(const std::string& gpu) {
    std::vector<std::string> out;
    auto devices = lib_->mig_devices(gpu);  // named: `*temporary` in a range-for dangles
    for (const auto& m : *devices) out.push_back(m.canonical_name());
    return out;
  }
  bool mig_on(const std::string& gpu) { return lib_->mig_mode(gpu)->current_enabled; }
  std::string spec_file(const std::string& uid) const { return "k8s.gpu.nvidia.com-claim_" + uid + ".yaml"; }
  FailNext fail_next() {
    void* h = ::dlopen(NVDRA_MOCK_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) return nullptr;
    auto fn = reinterpret_cast<FailNext>(::dlsym(h, "nvdraMockFailNext"));
    ::dlclose(h);  // lib_ keeps the mock loaded
    return fn;
  }
  // A GPU instance without its compute instance, as an agent killed between the two create calls
  // leaves it: the CI create fails and so does the create's own clean-up of the GI.
  void leave_bare_gpu_instance(const std::string& gpu, nvml::MigDeviceRequest request) {
    auto fail = fail_next();
    ASSERT_NE(fail, nullptr);
    ASSERT_EQ(fail("nvmlGpuInstanceCreateComputeInstance", 23 /* INSUFFICIENT_RESOURCES */, 1), 0);
    ASSERT_EQ(fail("nvmlGpuInstanceDestroy", 19 /* IN_USE */, 1), 0);
    const auto before = lib_->bare_gpu_instances(gpu)->size();
    ASSERT_FALSE(lib_->create_mig_device(gpu, request));
    ASSERT_EQ(lib_->bare_gpu_instances(gpu)->size(), before + 1);
  }
  // The one MIG entry of a completed claim's checkpoint.
  PreparedEntry mig_entry(const std::string& uid) {
    auto groups = decode_prepared_groups(committer_->current().claims.at(uid).prepared_devices, uid);
    return groups->at(0).devices.at(0);
  }

  TempDir tmp_;
  std::string host_root_;
  std::unique_ptr<nvml::GpuLibrary> lib_;
  std::unique_ptr<GpuInventory> inventory_;
  asio::io_context io_;
  runtime::WorkerPool pool_{2};
  MemoryCheckpointStore checkpoints_;
  cdi::MemorySpecStore specs_;
  FakeClaimSource source_;
  FakeMpsControl mps_;
  MigCounts mig_counts_;
  std::unique_ptr<CheckpointCommitter> committer_;
  std::unique_ptr<GpuClaimHandler> handler_;
};

TEST_F(DynamicMigTest, TheFullSetOfOneProfileIsCreatedAndDestroyedWithMigModeFollowing) {
  EXPECT_FALSE(mig_on(kGpu0));
  std::vector<kubelet::ClaimRef> claims;
  for (int s = 0; s < 7; ++s) {
    claims.push_back(add_claim("c" + std::to_string(s), {"gpu-0-mig-1g10gb-19-" + std::to_string(s)}));
    auto r = prepare(claims.back());
    ASSERT_TRUE(r) << r.error().describe();
  }
  EXPECT_TRUE(mig_on(kGpu0));
  EXPECT_EQ(instances(kGpu0).size(), 7u);
  EXPECT_EQ(mig_counts_.created, 7);
  // The checkpoint has upstream's concrete MIG record; the CDI spec the new instance's caps.
  const auto e = mig_entry("uid-c3");
  EXPECT_EQ(e.type, DeviceType::kMig);
  EXPECT_EQ(e.parent_uuid, kGpu0);
  EXPECT_EQ(e.uuid.rfind("MIG-", 0), 0u);
  const std::string spec = *specs_.read(spec_file("uid-c3"));
  EXPECT_THAT(spec, HasSubstr("/dev/nvidia-caps/nvidia-cap" + std::to_string(3 + e.gi_id * 9)));
  EXPECT_THAT(spec, HasSubstr("/dev/nvidia-caps/nvidia-cap" + std::to_string(3 + e.gi_id * 9 + 1 + e.ci_id)));
  // An 8th 1g device does not exist: every placement is taken.
  for (const auto& c : claims) ASSERT_TRUE(unprepare(c));
  EXPECT_TRUE(instances(kGpu0).empty());
  EXPECT_FALSE(mig_on(kGpu0)) << "Hopper: MIG mode goes off with the last MIG device";
  EXPECT_EQ(mig_counts_.destroyed, 7);
  EXPECT_TRUE(specs_.files().empty());
  EXPECT_TRUE(committer_->current().claims.empty());
}

TEST_F(DynamicMigTest, MixedProfilesThatFitAreCreatedAndOneThatDoesNotFailsCleanly) {
  auto a = add_claim("a", {"gpu-0-mig-4g40gb-5-0"});
  auto b = add_claim("b", {"gpu-0-mig-2g20gb-14-4", "gpu-0-mig-1g20gb-15-6"});
  ASSERT_TRUE(prepare(a));
  ASSERT_TRUE(prepare(b));
  EXPECT_THAT(instances(kGpu0), ::testing::UnorderedElementsAre("gpu-0-mig-4g40gb-5-0", "gpu-0-mig-2g20gb-14-4",
                                                                 "gpu-0-mig-1g20gb-15-6"));
  // Overlaps the 1g.20gb at slices 6-7 (a scheduler honouring the counters never asks for it).
  auto c = add_claim("c", {"gpu-0-mig-1g10gb-19-6"});
  auto r = prepare(c);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("gpu-0-mig-1g10gb-19-6"));
  EXPECT_THAT(r.error().message, HasSubstr("Insufficient Resources"));
  EXPECT_EQ(r.error().claim, c.describe());
  EXPECT_FALSE(committer_->current().claims.count("uid-c"));
  EXPECT_FALSE(specs_.files().count(spec_file("uid-c")));
  EXPECT_EQ(instances(kGpu0).size(), 3u) << "the others are untouched";
  // A claim that fails half-way (second device does not fit) leaves none of its devices behind.
  auto d = add_claim("d", {"gpu-1-mig-3g40gb-9-4", "gpu-0-mig-7g80gb-0-0"});
  ASSERT_FALSE(prepare(d));
  EXPECT_TRUE(instances(kGpu1).empty());
  EXPECT_FALSE(mig_on(kGpu1));
}

TEST_F(DynamicMigTest, ABusyGpuFailsUnprepareClearlyAndKubeletsRetrySucceeds) {
  auto a = add_claim("a", {"gpu-0-mig-3g40gb-9-0"});
  ASSERT_TRUE(prepare(a));
  auto fail = fail_next();
  ASSERT_NE(fail, nullptr);
  ASSERT_EQ(fail("nvmlComputeInstanceDestroy", 19 /* IN_USE */, 1), 0);
  auto st = unprepare(a);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(st.error().message, HasSubstr("gpu-0-mig-3g40gb-9-0"));
  EXPECT_THAT(st.error().message, HasSubstr("In use by another client"));
  EXPECT_TRUE(committer_->current().claims.count("uid-a")) << "kept for kubelet's retry";
  EXPECT_TRUE(specs_.files().count(spec_file("uid-a")));
  ASSERT_TRUE(unprepare(a));
  EXPECT_TRUE(instances(kGpu0).empty());
  EXPECT_TRUE(specs_.files().empty());
}

TEST_F(DynamicMigTest, ClaimsOnDifferentGpusPrepareConcurrently) {
  auto a = add_claim("a", {"gpu-0-mig-3g40gb-9-0"});
  auto b = add_claim("b", {"gpu-0-mig-3g40gb-9-4"});
  auto c = add_claim("c", {"gpu-1-mig-7g80gb-0-0"});
  auto d = add_claim("d", {"gpu-2"});
  auto all = [&]() -> asio::awaitable<bool> {
    auto [ra, rb, rc, rd] = co_await (handler_->prepare(a) && handler_->prepare(b) && handler_->prepare(c) &&
                                      handler_->prepare(d));
    co_return ra.ok() && rb.ok() && rc.ok() && rd.ok();
  };
  EXPECT_TRUE(run(all()));
  EXPECT_EQ(instances(kGpu0).size(), 2u);
  EXPECT_THAT(instances(kGpu1), ElementsAre("gpu-1-mig-7g80gb-0-0"));
}

TEST_F(DynamicMigTest, CrashBetweenCreateAndCheckpointIsRepairedAtStartWithoutOrphans) {
  // As if the agent died after creating the MIG device, before PrepareCompleted was written:
  // the PrepareStarted entry (the intent) and the instance exist. Plus an instance nobody owns.
  auto a = add_claim("a", {"gpu-0-mig-2g20gb-14-2"});
  CheckpointedClaim started{ClaimState::kPrepareStarted, encode_claim_status(source_.claims["default/a"]), {}, "a",
                            "default", {}};
  ASSERT_TRUE(run(committer_->commit({ClaimUpdate{"uid-a", started}})));
  ASSERT_TRUE(lib_->set_mig_mode(kGpu0, true));
  ASSERT_TRUE(lib_->create_mig_device(kGpu0, nvml::MigDeviceRequest{14, 2, 1, 0}));
  ASSERT_TRUE(lib_->set_mig_mode(kGpu1, true));
  ASSERT_TRUE(lib_->create_mig_device(kGpu1, nvml::MigDeviceRequest{19, 5, 0, 0}));
  // A completed claim whose device is still there is left alone.
  auto keep = add_claim("keep", {"gpu-2-mig-1g10gb-me-20-0"});
  ASSERT_TRUE(prepare(keep));

  handler_ = make_handler();  // the restarted agent
  auto report = recover();
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].describe();
  EXPECT_THAT(report.rolled_back, ElementsAre("uid-a"));
  EXPECT_THAT(report.orphan_migs, ElementsAre("gpu-1-mig-1g10gb-19-5"));
  EXPECT_TRUE(instances(kGpu0).empty());
  EXPECT_TRUE(instances(kGpu1).empty());
  EXPECT_FALSE(mig_on(kGpu0));
  EXPECT_FALSE(mig_on(kGpu1));
  EXPECT_EQ(instances("GPU-8b2e6f10-3c4d-4a5b-8e9f-1a2b3c4d6e03").size(), 1u);
  EXPECT_EQ(specs_.files().size(), 1u);
  EXPECT_EQ(committer_->current().claims.size(), 1u);
  // kubelet's retry prepares it from scratch.
  auto r = prepare(a);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_THAT(instances(kGpu0), ElementsAre("gpu-0-mig-2g20gb-14-2"));
}

TEST_F(DynamicMigTest, GpuInstancesLeftWithoutComputeInstanceAreDestroyedAtStart) {
  // Killed between GI and CI create: once for an in-flight claim (PrepareStarted), once for a
  // claim whose entry never reached the checkpoint. Neither GI is a MIG device, both hold placements.
  auto a = add_claim("a", {"gpu-0-mig-2g20gb-14-2"});
  CheckpointedClaim started{ClaimState::kPrepareStarted, encode_claim_status(source_.claims["default/a"]), {}, "a",
                            "default", {}};
  ASSERT_TRUE(run(committer_->commit({ClaimUpdate{"uid-a", started}})));
  ASSERT_TRUE(lib_->set_mig_mode(kGpu0, true));
  leave_bare_gpu_instance(kGpu0, nvml::MigDeviceRequest{14, 2, 1, 0});
  ASSERT_TRUE(lib_->set_mig_mode(kGpu1, true));
  leave_bare_gpu_instance(kGpu1, nvml::MigDeviceRequest{19, 5, 0, 0});
  ASSERT_TRUE(instances(kGpu0).empty() && instances(kGpu1).empty());

  handler_ = make_handler();  // the restarted agent
  auto report = recover();
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].describe();
  EXPECT_THAT(report.rolled_back, ElementsAre("uid-a"));
  EXPECT_THAT(report.orphan_migs, ElementsAre("gpu-1-mig-1g10gb-19-5"));
  EXPECT_TRUE(lib_->bare_gpu_instances(kGpu0)->empty());
  EXPECT_TRUE(lib_->bare_gpu_instances(kGpu1)->empty());
  EXPECT_FALSE(mig_on(kGpu0)) << "Hopper: MIG mode off once nothing is left";
  EXPECT_FALSE(mig_on(kGpu1));
  // Both placements can be prepared again.
  auto b = add_claim("b", {"gpu-1-mig-1g10gb-19-5"});
  auto ra = prepare(a);
  ASSERT_TRUE(ra) << ra.error().describe();
  auto rb = prepare(b);
  ASSERT_TRUE(rb) << rb.error().describe();
  EXPECT_THAT(instances(kGpu0), ElementsAre("gpu-0-mig-2g20gb-14-2"));
  EXPECT_THAT(instances(kGpu1), ElementsAre("gpu-1-mig-1g10gb-19-5"));
}

TEST_F(DynamicMigTest, ACompletedClaimWhoseInstanceVanishedGetsItRecreatedAtStart) {
  auto a = add_claim("a", {"gpu-0-mig-1g20gb-15-2"});
  ASSERT_TRUE(prepare(a));
  const auto before = mig_entry("uid-a");
  // Gone while the agent was down (an admin, a GPU reset), and another instance took its GI id.
  ASSERT_TRUE(lib_->destroy_mig_device(kGpu0, before.gi_id, before.ci_id));
  ASSERT_TRUE(lib_->create_mig_device(kGpu0, nvml::MigDeviceRequest{19, 0, 0, 0}));

  handler_ = make_handler();
  auto report = recover();
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].describe();
  EXPECT_THAT(report.orphan_migs, ElementsAre("gpu-0-mig-1g10gb-19-0"));
  EXPECT_THAT(report.recreated_migs, ElementsAre("uid-a/gpu-0-mig-1g20gb-15-2"));
  EXPECT_THAT(instances(kGpu0), ElementsAre("gpu-0-mig-1g20gb-15-2"));
  const auto after = mig_entry("uid-a");
  const auto now = lib_->mig_devices(kGpu0)->at(0);
  EXPECT_EQ(after.gi_id, now.gi_id);
  EXPECT_EQ(after.uuid, now.uuid);
  EXPECT_THAT(*specs_.read(spec_file("uid-a")), HasSubstr("/dev/nvidia-caps/nvidia-cap" + std::to_string(3 + now.gi_id * 9)));
  ASSERT_TRUE(unprepare(a));
  EXPECT_TRUE(instances(kGpu0).empty());
}

TEST_F(DynamicMigTest, WithoutAnNvmlLibraryADynamicDeviceFailsClearly) {
  GpuClaimHandlerOptions options;
  options.node_name = "node-a";
  options.host = cdi::HostView{host_root_, "/"};
  GpuClaimHandler no_lib(pool_, source_, *inventory_, *committer_, specs_, mps_, options);
  auto a = add_claim("a", {"gpu-0-mig-1g10gb-19-0"});
  auto r = run(no_lib.prepare(a));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("DynamicMIG device"));
  EXPECT_TRUE(committer_->current().claims.empty());
}

}  // namespace
}  // namespace nvdra::claims::testing
