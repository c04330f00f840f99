#include "agent/claims/sharing/helper_program.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "agent/runtime/stop_signals.hpp"

extern char** environ;

namespace nvdra::claims {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::vector<std::string> merged_env(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> by_name;
  std::vector<std::string> order;
  auto put = [&](const std::string& entry) {
    auto name = entry.substr(0, entry.find('='));
    if (!by_name.count(name)) order.push_back(name);
    by_name[name] = entry;
  };
  for (char** e = environ; e && *e; ++e) put(*e);
  for (const auto& entry : extra) put(entry);
  std::vector<std::string> out;
  for (const auto& name : order) out.push_back(by_name[name]);
  return out;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Small inputs (a control command): a pipe buffer holds them, so writing first cannot deadlock.
// A child that exits without reading must not kill the agent with SIGPIPE: block it on this
// (pool) thread for the write and drop a pending one afterwards. Closes `in_w`.
void write_stdin(Fd& in_w, const std::string& text) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(in_w.fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed stdin; its exit status tells what happened
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  in_w.close();
  timespec zero{};
  while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
}

// The child's stderr until it closes it, at most kMaxStderrBytes kept.
std::string read_stderr(int fd) {
  std::string err;
  char buf[1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (err.size() < kMaxStderrBytes) err.append(buf, std::min<std::size_t>(n, kMaxStderrBytes - err.size()));
  }
  return err;
}

}  // namespace

std::string describe(const HelperProgram& program) {
  std::string out;
  for (const auto& a : program.argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

Status run_helper_program(const HelperProgram& program) {
  if (program.argv.empty()) return make_error(ErrorCode::kInternal, "helper program without argv");
  int in_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return make_error(ErrorCode::kUnavailable, "pipe: " + std::string(std::strerror(errno)));
  Fd in_r{in_pipe[0]}, in_w{in_pipe[1]};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return make_error(ErrorCode::kUnavailable, "pipe: " + std::string(std::strerror(errno)));
  Fd err_r{err_pipe[0]}, err_w{err_pipe[1]};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.fd, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);

  std::vector<std::string> env = merged_env(program.env);
  std::vector<char*> argv_c, env_c;
  for (const auto& a : program.argv) argv_c.push_back(const_cast<char*>(a.c_str()));
  argv_c.push_back(nullptr);
  for (const auto& e : env) env_c.push_back(const_cast<char*>(e.c_str()));
  env_c.push_back(nullptr);

  pid_t pid = -1;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  runtime::spawn_signal_defaults(attr);  // the agent blocks its stop signals and ignores SIGPIPE
  int rc = ::posix_spawn(&pid, argv_c[0], &actions, &attr, argv_c.data(), env_c.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  in_r.close();
  err_w.close();
  if (rc != 0)
    return make_error(ErrorCode::kFailedPrecondition,
                      "cannot run " + program.argv[0] + ": " + std::strerror(rc));

  write_stdin(in_w, program.stdin_text);
  std::string err = read_stderr(err_r.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                      : "killed by signal " + std::to_string(WTERMSIG(status));
  err = trimmed(std::move(err));
  return make_error(ErrorCode::kUnavailable,
                    describe(program) + " " + how + (err.empty() ? std::string() : ": " + err));
}

}  // namespace nvdra::claims
