#include "test/k8s/double_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace nvdra::k8s::testing {

namespace fs = std::filesystem;

DoubleProcess::DoubleProcess(std::vector<std::string> args) {
  char tmpl[] = "/tmp/nvdra-k8s-double-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  // ctest may not pass NVDRA_SOURCE_DIR; the configured source dir is the fallback.
  const char* src = std::getenv("NVDRA_SOURCE_DIR");
  const std::string lib = std::string(src ? src : NVDRA_SOURCE_DIR_DEFAULT) + "/test/lib";
  std::vector<std::string> argv_s = {"python3", "-m", "apiserver_double", "--dir", dir_, "--node", "node1"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("PYTHONPATH=", 0) != 0) env_s.emplace_back(*e);
  }
  env_s.push_back("PYTHONPATH=" + lib);
  env_s.push_back("PYTHONDONTWRITEBYTECODE=1");
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The double prints one line on stdout once it serves (after writing ready.json): read it from a
  // pipe, so start-up is an event to wait for, and end of file means it died first.
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  const int spawned = posix_spawnp(&pid_, "python3", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  stdout_fd_ = out[0];
  if (spawned != 0) {
    pid_ = -1;
    stop();
    throw std::runtime_error("cannot start python3 -m apiserver_double");
  }
  pollfd pfd{stdout_fd_, POLLIN, 0};
  const int ready = ::poll(&pfd, 1, 60'000);
  char c = 0;
  if (ready > 0 && ::read(stdout_fd_, &c, 1) == 1) return;
  stop();  // a constructor that throws runs no destructor
  throw std::runtime_error(ready == 0 ? "apiserver double did not start in 60 s"
                                      : "apiserver double exited before serving");
}

void DoubleProcess::stop() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

DoubleProcess::~DoubleProcess() {
  stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

ClientConfig DoubleProcess::client_config() const {
  auto cfg = load_kubeconfig(kubeconfig());
  if (!cfg) throw std::runtime_error(cfg.error().describe());
  cfg->qps = 0;  // tests are not rate-limited unless they ask
  return *cfg;
}

Admin::Admin(boost::asio::any_io_executor ex, ClientConfig config) {
  auto t = HttpsTransport::create(std::move(ex), std::move(config));
  if (!t) throw std::runtime_error(t.error().describe());
  transport_ = std::move(*t);
}

boost::asio::awaitable<boost::json::value> Admin::get(std::string path) {
  auto res = co_await transport_->exchange(HttpMethod::kGet, std::move(path), {});
  if (!res || res->status != 200) throw std::runtime_error("admin GET failed");
  co_return boost::json::parse(res->body);
}

boost::asio::awaitable<boost::json::value> Admin::post(std::string path, boost::json::value body) {
  auto res = co_await transport_->exchange(HttpMethod::kPost, path, boost::json::serialize(body));
  if (!res || res->status != 200) throw std::runtime_error("admin POST " + path + " failed");
  co_return boost::json::parse(res->body);
}

boost::asio::awaitable<std::size_t> Admin::writes() {
  auto log = co_await get("/admin/requests");
  std::size_t n = 0;
  for (const auto& r : log.as_array()) {
    const auto method = r.at("method").as_string();
    if (method != "GET" && !r.at("path").as_string().starts_with("/admin")) ++n;
  }
  co_return n;
}

boost::asio::awaitable<std::size_t> Admin::requests() {
  auto log = co_await get("/admin/requests");
  std::size_t n = 0;
  for (const auto& r : log.as_array()) {
    if (!r.at("path").as_string().starts_with("/admin")) ++n;
  }
  co_return n;
}

}  // namespace nvdra::k8s::testing
