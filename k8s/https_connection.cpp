#include "k8s/https_connection.hpp"

#include <mutex>

namespace nvdra::k8s {

std::shared_ptr<SharedConnections> SharedConnections::for_server(
    boost::asio::any_io_executor ex, const std::shared_ptr<boost::asio::ssl::context>& ctx, const std::string& host,
    const std::string& port) {
  struct Entry {
    boost::asio::any_io_executor ex;
    std::weak_ptr<boost::asio::ssl::context> ctx;
    std::string host, port;
    std::weak_ptr<SharedConnections> shared;
  };
  static std::mutex mu;
  static std::vector<Entry> made;
  std::lock_guard lock(mu);
  std::erase_if(made, [](const Entry& e) { return e.shared.expired(); });
  for (const auto& e : made) {
    if (e.ex == ex && e.ctx.lock() == ctx && e.host == host && e.port == port)
      if (auto shared = e.shared.lock()) return shared;
  }
  auto shared = std::make_shared<SharedConnections>();
  made.push_back(Entry{std::move(ex), ctx, host, port, shared});
  return shared;
}

std::unique_ptr<HttpsConnection> SharedConnections::take_idle() {
  if (idle_.empty()) return nullptr;
  auto conn = std::move(idle_.back());  // the most recently used: the least likely closed by the server
  idle_.pop_back();
  return conn;
}

void SharedConnections::give_back(std::unique_ptr<HttpsConnection> conn) {
  if (idle_.size() >= kMaxIdle) return;
  conn->reused = true;
  idle_.push_back(std::move(conn));
}

}  // namespace nvdra::k8s
