#include "k8s/https_connection.hpp"

#include <algorithm>
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

void SharedConnections::close_expired(Clock::time_point now) {
  // The oldest are first: the rest were given back later.
  auto fresh = std::find_if(idle_.begin(), idle_.end(), [now](const Idle& i) { return now - i.since < kIdleTimeout; });
  idle_.erase(idle_.begin(), fresh);
}

std::unique_ptr<HttpsConnection> SharedConnections::take_idle(Clock::time_point now) {
  close_expired(now);
  if (idle_.empty()) return nullptr;
  auto conn = std::move(idle_.back().conn);  // the most recently used: the least likely closed by the server
  idle_.pop_back();
  return conn;
}

void SharedConnections::give_back(std::unique_ptr<HttpsConnection> conn, Clock::time_point now) {
  close_expired(now);
  if (idle_.size() >= kMaxIdle) return;
  conn->reused = true;
  idle_.push_back(Idle{std::move(conn), now});
}

}  // namespace nvdra::k8s
