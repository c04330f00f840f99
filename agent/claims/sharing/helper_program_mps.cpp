#include "agent/claims/sharing/helper_program_mps.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>

#include "agent/base/crash_point.hpp"
#include "agent/claims/sharing/helper_program.hpp"

namespace nvdra::claims {
namespace fs = std::filesystem;

std::string mps_daemon_id(const std::string& claim_uid, std::vector<std::string> uuids) {
  std::sort(uuids.begin(), uuids.end());
  std::string joined;
  for (const auto& u : uuids) joined += (joined.empty() ? "" : ",") + u;
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(joined.data()), joined.size(), digest.data());
  char hex[7];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x", digest[0], digest[1], digest[2]);
  return claim_uid + "-" + std::string(hex, 5);
}

Result<std::string> locate_mps_control(const std::string& driver_root) {
  std::string tried;
  for (const char* dir : {"/", "/opt/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"}) {
    auto path = (fs::path(driver_root) / fs::path(dir).relative_path() / "nvidia-cuda-mps-control").lexically_normal();
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return path.string();
    tried += (tried.empty() ? "" : ", ") + path.string();
  }
  return make_error(ErrorCode::kNotFound,
                    "nvidia-cuda-mps-control not found under driver root " + driver_root + " (tried " + tried + ")");
}

std::vector<std::string> mps_daemon_env(const MpsDaemon& daemon) {
  std::string visible;
  for (const auto& u : daemon.uuids) visible += (visible.empty() ? "" : ",") + u;
  return {"CUDA_MPS_PIPE_DIRECTORY=" + daemon.pipe_dir(), "CUDA_MPS_LOG_DIRECTORY=" + daemon.log_dir(),
          "CUDA_VISIBLE_DEVICES=" + visible};
}

std::vector<std::string> mps_daemon_flags(const MpsDaemon& daemon) {
  if (daemon.plan.multi_user) return {"-d", "-M"};
  return {"-d"};
}

Status create_mps_dirs(const MpsDaemon& daemon) {
  for (const auto& dir : {daemon.pipe_dir(), daemon.shm_dir(), daemon.log_dir()}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(ErrorCode::kUnavailable, "cannot create MPS directory " + dir + ": " + ec.message());
  }
  return {};
}

Status remove_mps_dirs(const MpsDaemon& daemon) {
  std::error_code ec;
  fs::remove_all(daemon.root_dir, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot remove MPS directory " + daemon.root_dir + ": " + ec.message());
  return {};
}

Status apply_mps_limits(const std::string& control, const MpsDaemon& daemon) {
  std::string commands;
  if (daemon.plan.active_thread_percentage)
    commands += "set_default_active_thread_percentage " + std::to_string(*daemon.plan.active_thread_percentage) + "\n";
  for (const auto& [uuid, limit] : daemon.plan.pinned_limits)
    commands += "set_default_device_pinned_mem_limit " + uuid + " " + limit + "\n";
  if (commands.empty()) return {};
  return run_helper_program(HelperProgram{{control}, mps_daemon_env(daemon), commands});
}

Status ProcessMpsControl::start(const MpsDaemon& daemon) {
  auto control = locate_mps_control(driver_root_);
  if (!control) return control.error();
  if (auto st = create_mps_dirs(daemon); !st) return st;
  HelperProgram start{{*control}, mps_daemon_env(daemon), {}};
  for (auto& flag : mps_daemon_flags(daemon)) start.argv.push_back(std::move(flag));
  if (auto st = run_helper_program(start); !st) return st;
  crash_point("mps-process.prepare.after-daemon-start");  // running, its limits not yet set
  return apply_mps_limits(*control, daemon);
}

Status ProcessMpsControl::stop(const MpsDaemon& daemon) {
  std::error_code ec;
  if (fs::exists(daemon.pipe_dir(), ec)) {
    auto control = locate_mps_control(driver_root_);
    if (!control) return control.error();
    HelperProgram quit{{*control}, {"CUDA_MPS_PIPE_DIRECTORY=" + daemon.pipe_dir(), "CUDA_MPS_LOG_DIRECTORY=" + daemon.log_dir()},
                       "quit\n"};
    if (auto st = run_helper_program(quit); !st) return st;
  }
  return remove_mps_dirs(daemon);
}

}  // namespace nvdra::claims
