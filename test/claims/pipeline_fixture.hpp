#pragma once
// Shared set-up of the pipeline tests: the dgx-a100 mock NVML through the real dlopen path, a fake
// driver root whose nvidia-smi records its arguments, a fake host /proc for MIG caps, memory CDI
// and checkpoint stores, a fake ClaimSource and a recording MpsControl.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/memory_spec_store.hpp"
#include "nvml/discovery.hpp"
#include "test/claims/temp_dir.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::claims::testing {

namespace asio = boost::asio;

class FakeClaimSource final : public ClaimSource {
 public:
  asio::awaitable<Result<ClaimAllocation>> get(kubelet::ClaimRef claim) override {
    ++lookups;
    auto it = claims.find(claim.namespace_name + "/" + claim.name);
    if (it == claims.end())
      co_return make_error(ErrorCode::kNotFound, "resourceclaim " + claim.namespace_name + "/" + claim.name + " not found");
    co_return it->second;
  }
  std::map<std::string, ClaimAllocation> claims;  // by "ns/name"
  int lookups = 0;
};

class FakeMpsControl final : public MpsControl {
 public:
  Status start(const MpsDaemon& d) override {
    std::lock_guard lock(mu);
    started.push_back(d);
    running[d.id] = d;
    return {};
  }
  Status stop(const MpsDaemon& d) override {
    std::lock_guard lock(mu);
    stopped.push_back(d.id);
    running.erase(d.id);
    return {};
  }
  const char* kind() const override { return "fake"; }
  std::mutex mu;
  std::vector<MpsDaemon> started;
  std::vector<std::string> stopped;
  std::map<std::string, MpsDaemon> running;
};

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string gpu_opaque(const std::string& sharing_json) {
  return R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig")" +
         (sharing_json.empty() ? std::string() : "," + sharing_json) + "}";
}

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    state_dir_ = std::make_unique<TempDir>();
    ::setenv("NVDRA_MOCK_PROFILE", "dgx-a100", 1);
    ::setenv("NVDRA_MOCK_STATE_DIR", state_dir_->path().c_str(), 1);
    auto lib = nvml::open_nvml(nvml::LoadOptions{NVDRA_MOCK_LIBRARY, "/"});
    ASSERT_TRUE(lib) << lib.error().describe();
    auto model = nvml::discover(**lib);
    ASSERT_TRUE(model) << model.error().describe();
    inventory_ = std::make_unique<GpuInventory>(*model);
  }
  static void TearDownTestSuite() {
    inventory_.reset();
    state_dir_.reset();
  }

  void SetUp() override {
    namespace fs = std::filesystem;
    driver_root_ = tmp_.path() + "/driver";
    host_root_ = tmp_.path() + "/host";
    smi_log_ = tmp_.path() + "/nvidia-smi.log";
    // Records every call; fails with a message on stderr when <tmp>/smi-fails exists.
    write_file(driver_root_ + "/usr/bin/nvidia-smi",
               "#!/bin/sh\nif [ -e '" + tmp_.path() + "/smi-fails' ]; then echo 'GPU is busy' >&2; exit 3; fi\n" +
                   "echo \"$*\" >> '" + smi_log_ + "'\n");
    ::chmod((driver_root_ + "/usr/bin/nvidia-smi").c_str(), 0755);
    write_file(host_root_ + "/proc/devices", "Character devices:\n195 nvidia\n236 nvidia-caps\n");
    unsigned minor = 30;
    for (const auto& name : inventory_->names()) {
      const auto* d = inventory_->find(name);
      if (d->type != DeviceType::kMig) continue;
      std::string gi = host_root_ + "/proc/driver/nvidia/capabilities/gpu" + std::to_string(d->parent_minor) +
                       "/mig/gi" + std::to_string(d->gi_id);
      write_file(gi + "/access", "DeviceFileMinor: " + std::to_string(minor++) + "\nDeviceFileMode: 292\n");
      write_file(gi + "/ci" + std::to_string(d->ci_id) + "/access",
                 "DeviceFileMinor: " + std::to_string(minor++) + "\nDeviceFileMode: 292\n");
    }
    committer_ = std::make_unique<CheckpointCommitter>(io_.get_executor(), pool_, checkpoints_, Checkpoint{});
    handler_ = make_handler();
  }

  std::unique_ptr<GpuClaimHandler> make_handler() {
    GpuClaimHandlerOptions options;
    options.node_name = "node-a";
    options.driver_root = driver_root_;
    options.mps_root = tmp_.path() + "/mps";
    options.host = cdi::HostView{host_root_, "/"};
    options.common_edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
    options.gates.time_slicing_settings = true;
    options.gates.mps_support = true;
    return std::make_unique<GpuClaimHandler>(pool_, source_, *inventory_, *committer_, specs_, mps_, options);
  }

  // A claim whose results name `devices` (request "gpu" each) and carry `configs`.
  kubelet::ClaimRef add_claim(const std::string& name, const std::string& uid, std::vector<std::string> devices,
                              std::vector<ConfigEntry> configs = {}) {
    ClaimAllocation a;
    a.uid = uid;
    for (const auto& d : devices) a.results.push_back(AllocationResult{"gpu", "gpu.nvidia.com", "node-a", d});
    a.configs = std::move(configs);
    source_.claims["default/" + name] = a;
    return kubelet::ClaimRef{"default", name, uid};
  }

  // Runs one awaitable on the test's io_context to completion (deadline 30 s).
  template <class T>
  T run(asio::awaitable<T> op) {
    return nvdra::testing::run_awaitable(io_, std::move(op));
  }

  Result<std::vector<kubelet::PreparedDevice>> prepare(const kubelet::ClaimRef& c) { return run(handler_->prepare(c)); }
  Status unprepare(const kubelet::ClaimRef& c) { return run(handler_->unprepare(c)); }
  std::string smi_calls() const { return read_file(smi_log_); }
  std::string spec_file(const std::string& uid) const { return "k8s.gpu.nvidia.com-claim_" + uid + ".yaml"; }

  static inline std::unique_ptr<TempDir> state_dir_;
  static inline std::unique_ptr<GpuInventory> inventory_;
  TempDir tmp_;
  std::string driver_root_, host_root_, smi_log_;
  // io_ outlives pool_: work still finishing on the pool at teardown (a committer save) posts its
  // completion to io_.
  asio::io_context io_;
  runtime::WorkerPool pool_{2};
  MemoryCheckpointStore checkpoints_;
  cdi::MemorySpecStore specs_;
  FakeClaimSource source_;
  FakeMpsControl mps_;
  std::unique_ptr<CheckpointCommitter> committer_;
  std::unique_ptr<GpuClaimHandler> handler_;
};

}  // namespace nvdra::claims::testing
