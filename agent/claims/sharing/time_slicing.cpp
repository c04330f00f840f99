#include "agent/claims/sharing/time_slicing.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "agent/claims/sharing/helper_program.hpp"

namespace nvdra::claims {
namespace fs = std::filesystem;

namespace {

std::string under(const std::string& root, const std::string& dir, const std::string& name) {
  return (fs::path(root) / fs::path(dir).relative_path() / name).lexically_normal().string();
}

bool regular_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows symlinks, as upstream resolves them
}

}  // namespace

Result<std::string> NvidiaSmi::locate() const {
  std::string tried;
  for (const char* dir : {"/", "/opt/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"}) {
    auto path = under(driver_root_, dir, "nvidia-smi");
    if (regular_file(path)) return path;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  return make_error(ErrorCode::kNotFound, "nvidia-smi not found under driver root " + driver_root_ + " (tried " + tried + ")");
}

std::vector<std::string> NvidiaSmi::env() const {
  // Upstream preloads the driver root's NVML so nvidia-smi talks to the same driver as the agent.
  for (const char* dir : {"/", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64",
                          "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"}) {
    auto lib = under(driver_root_, dir, "libnvidia-ml.so.1");
    if (!regular_file(lib)) continue;
    const char* existing = std::getenv("LD_PRELOAD");
    return {"LD_PRELOAD=" + lib + (existing && *existing ? std::string(":") + existing : std::string())};
  }
  return {};
}

Status NvidiaSmi::run(const std::string& smi, std::vector<std::string> args) const {
  HelperProgram program{{smi}, env(), {}};
  program.argv.insert(program.argv.end(), args.begin(), args.end());
  return run_helper_program(program);
}

Status NvidiaSmi::set_time_slice(std::vector<std::string> gpu_uuids, int value) const {
  auto smi = locate();
  if (!smi) return smi.error();
  std::sort(gpu_uuids.begin(), gpu_uuids.end());
  for (const auto& uuid : gpu_uuids)
    if (auto st = run(*smi, {"-i", uuid, "-c", "DEFAULT"}); !st) return st;
  for (const auto& uuid : gpu_uuids)
    if (auto st = run(*smi, {"compute-policy", "-i", uuid, "--set-timeslice", std::to_string(value)}); !st) return st;
  return {};
}

Status NvidiaSmi::set_compute_mode(std::vector<std::string> gpu_uuids, const std::string& mode) const {
  auto smi = locate();
  if (!smi) return smi.error();
  std::sort(gpu_uuids.begin(), gpu_uuids.end());
  for (const auto& uuid : gpu_uuids)
    if (auto st = run(*smi, {"-i", uuid, "-c", mode}); !st) return st;
  return {};
}

Status NvidiaSmi::set_persistence_mode(const std::string& pci_address, bool enabled) const {
  auto smi = locate();
  if (!smi) return smi.error();
  return run(*smi, {"-i", pci_address, "-pm", enabled ? "1" : "0"});
}

}  // namespace nvdra::claims
