#pragma once
// MeteredApiServer — an ApiServer decorator that reports every request to a Sink: verb and
// HTTP status (nvdra_api_requests_total), watches opened again on a resource already watched
// through this client (nvdra_api_watch_restarts_total), and ResourceSlice writes
// (nvdra_resource_slice_writes_total). The k8s folder itself knows nothing of metrics.
// Same threading as the wrapped server (io_context thread).
#include <memory>
#include <set>
#include <string>

#include "agent/base/metrics_sink.hpp"
#include "k8s/api_server.hpp"

namespace nvdra::metrics {

class MeteredApiServer final : public k8s::ApiServer {
 public:
  MeteredApiServer(std::shared_ptr<k8s::ApiServer> inner, Sink& sink);

  boost::asio::awaitable<k8s::ApiResult<std::string>> get(k8s::ResourceType type, k8s::ObjectKey key) override;
  boost::asio::awaitable<k8s::ApiResult<k8s::ListResult>> list(k8s::ResourceType type, std::string ns,
                                                               k8s::ListOptions options) override;
  boost::asio::awaitable<k8s::ApiResult<std::unique_ptr<k8s::WatchStream>>> watch(k8s::ResourceType type,
                                                                                  std::string ns,
                                                                                  k8s::WatchOptions options) override;
  boost::asio::awaitable<k8s::ApiResult<std::string>> create(k8s::ResourceType type, std::string ns,
                                                             std::string body) override;
  boost::asio::awaitable<k8s::ApiResult<std::string>> update(k8s::ResourceType type, k8s::ObjectKey key,
                                                             std::string body) override;
  boost::asio::awaitable<k8s::ApiResult<std::string>> patch(k8s::ResourceType type, k8s::ObjectKey key,
                                                            std::string body) override;
  boost::asio::awaitable<k8s::ApiStatus> remove(k8s::ResourceType type, k8s::ObjectKey key,
                                                k8s::Preconditions pre) override;
  boost::asio::awaitable<k8s::ApiResult<k8s::ServerVersion>> version() override;
  boost::asio::awaitable<k8s::ApiResult<std::string>> get_path(std::string path) override;
  std::shared_ptr<ReconnectPacing> reconnect_pacing() const override { return inner_->reconnect_pacing(); }

 private:
  template <class T>
  void record(const char* verb, const k8s::ApiResult<T>& result, const k8s::ResourceType* type = nullptr);

  std::shared_ptr<k8s::ApiServer> inner_;
  Sink& sink_;
  std::set<std::string> watched_;  // resources a watch was opened on
};

}  // namespace nvdra::metrics
