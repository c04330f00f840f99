#pragma once
// Test helper: runs test/lib/apiserver_double as a child process in a fresh temporary folder and
// talks to its /admin endpoints. The double prints a line (and writes ready.json) once it serves.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "k8s/client_config.hpp"
#include "k8s/https_transport.hpp"

namespace nvdra::k8s::testing {

class DoubleProcess {
 public:
  // Extra CLI arguments, e.g. {"--version", "1.34"}. Throws when the double does not come up.
  explicit DoubleProcess(std::vector<std::string> args = {});
  ~DoubleProcess();

  const std::string& dir() const { return dir_; }
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  ClientConfig client_config() const;  // from the kubeconfig it wrote

 private:
  void stop();  // SIGTERM and reap the double, close its stdout
  std::string dir_;
  int pid_ = -1;
  int stdout_fd_ = -1;  // the double's stdout: its "serving" line, then kept open until it exits
};

// A client for /admin/* (unauthenticated, test-only endpoints of the double).
class Admin {
 public:
  Admin(boost::asio::any_io_executor ex, ClientConfig config);
  boost::asio::awaitable<boost::json::value> get(std::string path);
  boost::asio::awaitable<boost::json::value> post(std::string path, boost::json::value body = boost::json::object{});
  // Writes (POST/PUT/DELETE, admin excluded) the double has served since the last reset.
  boost::asio::awaitable<std::size_t> writes();
  boost::asio::awaitable<std::size_t> requests();  // all API requests, admin excluded

 private:
  std::unique_ptr<HttpsTransport> transport_;
};

}  // namespace nvdra::k8s::testing
