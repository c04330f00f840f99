// nvdra-agent entry point: parse the invocation, set up logging, run the App.
#include <malloc.h>

#include <absl/synchronization/mutex.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "agent/app.hpp"
#include "agent/base/log.hpp"
#include "agent/devices_command.hpp"
#include "agent/config/loader.hpp"
#include "agent/runtime/logging.hpp"
#include "agent/runtime/stop_signals.hpp"
#include "agent/systemd/notifier.hpp"

int main(int argc, char** argv) {
  // One malloc arena for all threads, set before any thread exists: glibc gives each of the ~18
  // threads (gRPC's pools, the WorkerPool) an arena of its own, whose freed pages stay resident —
  // 4.5 MB of the idle RSS after a prepare burst. The agent's allocations are few and short.
  ::mallopt(M_ARENA_MAX, 1);
  // Debian builds abseil without NDEBUG, so every absl::Mutex that gRPC locks also feeds abseil's
  // debug lock-order graph (one global graph behind a global lock) and the process aborts on a cycle
  // it finds: a debugging aid for gRPC's developers, paid on each gRPC call and at start (issue #33).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto inv = nvdra::config::load_invocation(args, nvdra::config::process_env());
  if (!inv) {
    // One line that names the flag, variable or file; status 2 like any usage error.
    std::fprintf(stderr, "nvdra-agent: %s\n", inv.error().message.c_str());
    return 2;
  }
  if (inv->action == nvdra::config::Invocation::Action::kPrintAndExit) {
    std::fputs(inv->output.c_str(), stdout);
    return 0;
  }
  // A peer closing a socket must surface as an error code, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  const auto& options = inv->options;
  nvdra::runtime::init_logging(nvdra::runtime::choose_log_shape(options.log_format), options.log_level);
  auto log = nvdra::logger("agent");
  if (!options.config_file.empty()) log->info("config file={}", options.config_file);
  for (const auto& note : inv->log_notes) log->info("{}", note);

  if (inv->action == nvdra::config::Invocation::Action::kDevices) {
    return nvdra::run_devices_command(options, inv->devices_output_format, stdout, stderr);
  }
  // Before the App starts any thread (gRPC's, the worker pool): every thread inherits the mask, and
  // the loop alone reads the stop signals (StopSignals). Not earlier: `devices` keeps Ctrl-C.
  nvdra::runtime::block_stop_signals();
  try {
    nvdra::App app(options, nvdra::systemd::make_sd_notifier());
    return app.run();
  } catch (const std::exception& e) {
    log->critical("start-up failed: {}", e.what());
    return 1;
  }
}
