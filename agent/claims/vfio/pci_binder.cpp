#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "agent/claims/vfio/pci_binder.hpp"

namespace nvdra::claims {
namespace {

namespace fs = std::filesystem;

class SysfsPciBinder final : public PciBinder {
 public:
  explicit SysfsPciBinder(std::string host_root) : root_(std::move(host_root)), pci_(root_ / "sys/bus/pci") {}

  Result<std::string> driver(const std::string& address) override {
    const fs::path dev = pci_ / "devices" / address;
    std::error_code ec;
    if (!fs::exists(dev, ec)) return make_error(ErrorCode::kNotFound, "no PCI function " + dev.string());
    const fs::path link = fs::read_symlink(dev / "driver", ec);
    return ec ? std::string() : link.filename().string();
  }

  Status unbind(const std::string& address, const std::string& driver) override {
    return write(pci_ / "drivers" / driver / "unbind", address);
  }
  Status set_override(const std::string& address, const std::string& driver) override {
    return write(pci_ / "devices" / address / "driver_override", driver);
  }
  Status probe(const std::string& address) override { return write(pci_ / "drivers_probe", address); }

  Result<std::vector<GpuHolder>> holders(unsigned minor) override {
    if (auto st = host_processes_visible(); !st) return st.error();
    // This agent is not a holder to wait for (self_holds); the host's /proc names it by its pid in the
    // host's pid namespace (<host>/proc/self), which differs from getpid() inside a container.
    std::error_code sec;
    const std::string host_self = fs::read_symlink(root_ / "proc/self", sec).string();
    const std::string own = std::to_string(::getpid());
    std::vector<GpuHolder> out;
    std::error_code ec;
    for (const auto& proc : fs::directory_iterator(root_ / "proc", ec)) {
      const std::string pid = proc.path().filename();
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (pid == own || pid == host_self) continue;
      auto held = holds(proc.path() / "fd", minor);
      if (!held) return held.error();
      if (!*held) continue;
      std::ifstream comm(proc.path() / "comm");
      GpuHolder h;
      std::from_chars(pid.data(), pid.data() + pid.size(), h.pid);
      std::getline(comm, h.command);
      out.push_back(std::move(h));
    }
    if (ec) return blind((root_ / "proc").string() + " cannot be listed (" + ec.message() + ")");
    return out;
  }

  bool self_holds(unsigned minor) override {
    auto held = holds("/proc/self/fd", minor);
    return !held || *held;  // unreadable: let go of the GPU anyway (the release is harmless)
  }

  std::string iommufd_cdev(const std::string& address) override {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(pci_ / "devices" / address / "vfio-dev", ec))
      return e.path().filename().string();
    return {};
  }

 private:
  // Whether a process's fd directory has a link to /dev/nvidia<minor>. The link names the node in the
  // process's mount namespace: a driver container's /driver-root/dev/nvidiaN holds the GPU just the same.
  // A process gone meanwhile holds nothing; one whose fds cannot be read is an error.
  static Result<bool> holds(const fs::path& fds, unsigned minor) {
    const std::string node = "/dev/nvidia" + std::to_string(minor);
    std::error_code ec;
    fs::directory_iterator it(fds, ec);
    if (ec) {
      std::error_code gone;
      if (ec == std::errc::no_such_file_or_directory && !fs::exists(fds.parent_path(), gone)) return false;
      return blind(fds.string() + " cannot be read (" + ec.message() + ")");
    }
    for (const auto& fd : it) {
      std::error_code lec;
      const std::string target = fs::read_symlink(fd.path(), lec).string();
      if (!lec && target.size() >= node.size() && target.compare(target.size() - node.size(), node.size(), node) == 0)
        return true;
    }
    return false;
  }

  // The host's process list shows the kernel's threads: pid 2 is kthreadd in the initial pid
  // namespace only. Without it the agent sees a container's processes and would miss the host's.
  Status host_processes_visible() const {
    const fs::path proc = root_ / "proc";
    std::ifstream comm(proc / "2" / "comm");
    std::string name;
    if (comm && std::getline(comm, name) && name == "kthreadd") return {};
    std::error_code ec;
    if (!fs::is_directory(proc, ec)) return blind(proc.string() + " is missing");
    return blind(proc.string() + " is not the host's process list (it shows no kernel threads: pid 2 is not "
                                 "kthreadd, so it is a container's pid namespace)");
  }

  static Error blind(const std::string& what) {
    return make_error(ErrorCode::kFailedPrecondition,
                      "cannot tell which host processes have the GPU open: " + what +
                          ". The agent needs the host's processes to know the GPU is free before it leaves nvidia: "
                          "run it with hostPID: true and privileged (the gpu-passthrough overlay of the shipped "
                          "manifests does), with --host-root naming the host's / whose proc is the host's /proc");
  }

  // One write(2), as echo does: sysfs acts on each write. O_NONBLOCK: a write to a file nobody
  // acts on fails at once instead of hanging the worker.
  static Status write(const fs::path& file, const std::string& value) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return make_error(ErrorCode::kUnavailable, "open " + file.string() + ": " + std::strerror(errno));
    const std::string line = value + "\n";
    const ssize_t n = ::write(fd, line.data(), line.size());
    const int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(line.size()))
      return make_error(ErrorCode::kUnavailable,
                        "write \"" + value + "\" to " + file.string() + ": " + (n < 0 ? std::strerror(err) : "short write"));
    return {};
  }

  fs::path root_;
  fs::path pci_;
};

}  // namespace

std::unique_ptr<PciBinder> make_sysfs_pci_binder(std::string host_root) {
  return std::make_unique<SysfsPciBinder>(std::move(host_root));
}

}  // namespace nvdra::claims
