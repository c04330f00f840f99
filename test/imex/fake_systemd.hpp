#pragma once
// Test helper: runs test/imex/fake_systemd1 (a stand-in org.freedesktop.systemd1) on a private
// bus as a child process and talks to it over its stdin/stdout, one command a line.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace nvdra::test {

class FakeSystemd {
 public:
  explicit FakeSystemd(const std::string& address) {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      ::setenv("DBUS_SYSTEM_BUS_ADDRESS", address.c_str(), 1);
      ::execl(NVDRA_FAKE_SYSTEMD1, NVDRA_FAKE_SYSTEMD1, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (line() != "ready") throw std::runtime_error("fake_systemd1 did not come up");
  }
  ~FakeSystemd() { stop(); }
  FakeSystemd(const FakeSystemd&) = delete;
  FakeSystemd& operator=(const FakeSystemd&) = delete;

  // Sends one command and returns its answer line.
  std::string command(const std::string& text) {
    const std::string l = text + "\n";
    if (::write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return "";
    return line();
  }
  void set(const std::string& unit, const std::string& load, const std::string& active, const std::string& sub) {
    if (command("set " + unit + " " + load + " " + active + " " + sub) != "ok")
      throw std::runtime_error("fake_systemd1 did not take the state");
  }
  int lifecycle_calls() { return std::stoi(command("calls")); }

  void stop() {
    if (pid_ <= 0) return;
    ::close(to_);  // EOF: the fake exits
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::close(from_);
    pid_ = -1;
  }

 private:
  std::string line() {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) continue;
      char c = 0;
      if (::read(from_, &c, 1) != 1) break;
      if (c == '\n') return out;
      out += c;
    }
    return out;
  }
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

}  // namespace nvdra::test
