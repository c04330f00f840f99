#include "test/systemd/private_bus.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace nvdra::test {
namespace {

constexpr const char* kPermissive = R"(
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
  </policy>)";

}  // namespace

PrivateBus::PrivateBus(std::string policy) {
  char tmpl[] = "/tmp/nvdra-bus-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  config_ = dir_ + "/bus.conf";
  std::ofstream(config_) << "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\" "
                            "\"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>\n"
                            "  <type>system</type>\n  <listen>unix:path="
                         << dir_ << "/socket</listen>\n  <auth>EXTERNAL</auth>\n"
                         << (policy.empty() ? kPermissive : policy) << "\n</busconfig>\n";
  start();
}

PrivateBus::~PrivateBus() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PrivateBus::start() {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const std::string config_arg = "--config-file=" + config_;
  const std::string print_arg = "--print-address=" + std::to_string(fds[1]);
  const char* argv[] = {"dbus-daemon", config_arg.c_str(), "--nofork", "--nopidfile", print_arg.c_str(), nullptr};
  pid_ = ::fork();
  if (pid_ == 0) {
    // A crashed test must not leave its daemon behind holding the test's output open.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::close(fds[0]);
    ::execvp("dbus-daemon", const_cast<char**>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid_ < 0) {
    ::close(fds[0]);
    throw std::runtime_error("cannot start dbus-daemon (is the dbus package installed?)");
  }
  // The daemon prints its address once it listens: that is the event to wait for.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buf[256];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (line.find('\n') == std::string::npos) throw std::runtime_error("dbus-daemon did not print its address");
  // Without the guid: a restarted daemon has a new one, and clients must still reach it.
  address_ = line.substr(0, line.find('\n'));
  address_ = address_.substr(0, address_.find(",guid="));
}

void PrivateBus::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void PrivateBus::restart() {
  stop();
  start();
}

}  // namespace nvdra::test
