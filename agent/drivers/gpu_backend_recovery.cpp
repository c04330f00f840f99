// GpuBackend: what the start-up recovery of gpu.nvidia.com claims did, told to operators (log
// lines, Events, the status's errors, metrics); and the watch for a driver changed under it.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/config/options.hpp"
#include "agent/drivers/event_reporting.hpp"
#include "agent/drivers/gpu_backend.hpp"
#include "agent/drivers/gone_claim_sweep.hpp"
#include "agent/drivers/gpu_backend_parts.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "agent/metrics/metrics.hpp"
#include "agent/status/agent_status.hpp"

namespace nvdra::drivers {

namespace {

// What an operator does about an entry kept aside (README "Faults in the field").
constexpr const char* kUnreadableAction =
    "its devices (MIG devices, MPS daemon, vfio-pci binding) are left alone and no MIG device on this node is "
    "destroyed at start-up while it is there; to settle it, move checkpoint.json aside and restart the agent: "
    "the prepared claims are then rebuilt from their CDI specs and the API";

// How often the running driver's version is asked (one NVML call on the worker pool): an upgrade is
// served again within this much of the new module's load.
constexpr std::chrono::seconds kDriverCheck{2};

}  // namespace

boost::asio::awaitable<std::string> GpuBackend::driver_changed() {
  nvml::GpuLibrary* lib = parts_ && parts_->gpus ? parts_->gpus->library.get() : nullptr;
  const std::string version = parts_ ? parts_->model.system.driver_version : std::string();
  boost::asio::steady_timer timer(ctx_.executor);
  for (;;) {
    // Without NVML (passthrough only) nothing is asked: the timer never fires.
    if (lib) timer.expires_after(kDriverCheck);
    else timer.expires_at(boost::asio::steady_timer::time_point::max());
    co_await timer.async_wait(boost::asio::use_awaitable);
    auto now = co_await ctx_.workers.run([lib] { return lib->system_info(); });
    // Only the driver's own answers (not loaded, another version) end the session: an "Uninitialized" while
    // a VFIO hand-over restarts NVML's session without GPUs (release_gpus) is asked again next time.
    if (!now && now.error().code == ErrorCode::kUnavailable)
      co_return "NVML stopped answering (" + now.error().describe() + ")";
    if (!now) continue;
    if (now->driver_version != version)
      co_return "the NVIDIA driver changed from " + version + " to " + now->driver_version;
  }
}

void GpuBackend::report_gone_claims(const GoneClaimReport& report, std::chrono::duration<double, std::milli> took) {
  auto log = nvdra::logger(config::kGpuDriverName);
  for (const auto& uid : report.unprepared) log->info("claim uid={} gone from the API: unprepared", uid);
  log->info("driver={} asked the API about {} prepared claim(s) in {:.0f} ms: {} gone", config::kGpuDriverName,
            report.asked, took.count(), report.unprepared.size());
  for (const auto& e : report.errors) {
    log->warn("recovery: {}", e);
    ctx_.status.record_error(config::kGpuDriverName, "recovery: " + e);
  }
}

void GpuBackend::report_recovery(const claims::RecoveryReport& report) {
  auto log = nvdra::logger(config::kGpuDriverName);
  const auto& node = ctx_.options.node_name;
  const std::string driver = config::kGpuDriverName;
  for (const auto& uid : report.rolled_back) log->info("claim uid={} unfinished prepare rolled back", uid);
  for (const auto& f : report.orphan_specs) {
    log->warn("cdi spec={} owned by no claim: removed", f);
    warn_about_node(events_, node, kReasonCdiSpecRemoved, kActionRecoverCdiSpecs,
                    "driver " + driver + ": CDI spec " + f +
                        " is owned by no prepared claim (foreign, malformed or left behind): removed");
  }
  for (const auto& m : report.orphan_migs) log->info("mig device={} owned by no claim: destroyed", m);
  for (const auto& m : report.recreated_migs) log->info("mig device={} of a prepared claim was missing: recreated", m);
  for (const auto& u : report.unreadable) {
    const std::string note = "checkpoint entry of claim " + u.claim.describe() + " cannot be read (" + u.why +
                             "): kept aside; " + kUnreadableAction;
    log->warn("{}", note);
    ctx_.status.record_error(driver, note);
    warn_about_claim(events_, u.claim, kReasonCheckpointEntryUnreadable, kActionRecoverClaims, note);
  }
  for (const auto& m : report.kept_migs)
    log->warn("mig device={} owned by no readable claim: kept, as a checkpoint entry that cannot be read may own it",
              m);
  ctx_.metrics.unreadable_claims(driver, report.unreadable.size());
  for (const auto& e : report.errors) {
    log->warn("recovery: {}", e.describe());
    ctx_.status.record_error(driver, "recovery: " + e.describe());
  }
}

}  // namespace nvdra::drivers
