#pragma once
// HttpsApiServer: the real ApiServer over HTTPS (Boost.Beast + Asio SSL + OpenSSL).
//  * TLS: the peer is verified against the configured CA (or the system store) and the host name,
//    unless the kubeconfig says insecure-skip-tls-verify; optional client certificate.
//  * Auth: bearer token; a token file is re-read when it changes and once more after a 401, so a
//    rotated service-account token is picked up without a restart.
//  * Keep-alive: idle connections are reused; a request that finds a reused connection closed by
//    the server is retried once on a fresh one. Watches get their own connection.
//  * QPS/burst limit on every request and watch start; 429 answers are retried after Retry-After
//    (at most kMax429Retries times), other failures are returned to the caller.
// All coroutines run on the executor given at creation; not thread-safe (one io_context thread).
#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <memory>

#include "agent/base/result.hpp"
#include "k8s/api_server.hpp"
#include "k8s/client_config.hpp"

namespace nvdra::k8s {

class HttpsApiServer final : public ApiServer {
 public:
  static constexpr int kMax429Retries = 5;

  struct Stats {
    uint64_t requests = 0;           // HTTP requests sent, watches included
    uint64_t connections_opened = 0;
  };

  // Fails when the TLS material in `config` is unusable (bad PEM).
  static Result<std::shared_ptr<HttpsApiServer>> create(boost::asio::any_io_executor ex, ClientConfig config);
  ~HttpsApiServer() override;

  boost::asio::awaitable<ApiResult<std::string>> get(ResourceType type, ObjectKey key) override;
  boost::asio::awaitable<ApiResult<ListResult>> list(ResourceType type, std::string ns, ListOptions options) override;
  boost::asio::awaitable<ApiResult<std::unique_ptr<WatchStream>>> watch(ResourceType type, std::string ns,
                                                                        WatchOptions options) override;
  boost::asio::awaitable<ApiResult<std::string>> create(ResourceType type, std::string ns, std::string body) override;
  boost::asio::awaitable<ApiResult<std::string>> update(ResourceType type, ObjectKey key, std::string body) override;
  boost::asio::awaitable<ApiResult<std::string>> patch(ResourceType type, ObjectKey key, std::string body) override;
  boost::asio::awaitable<ApiStatus> remove(ResourceType type, ObjectKey key, Preconditions pre) override;
  boost::asio::awaitable<ApiResult<ServerVersion>> version() override;
  boost::asio::awaitable<ApiResult<std::string>> get_path(std::string path) override;
  std::shared_ptr<ReconnectPacing> reconnect_pacing() const override;

  Stats stats() const;

  struct Impl;

 private:
  explicit HttpsApiServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// "/apis/g/v/namespaces/ns/plural[/name[/subresource]]" — exposed for tests.
std::string resource_path(const ResourceType& type, const std::string& ns, const std::string& name = {});
// Percent-encodes a query value (RFC 3986 unreserved characters pass).
std::string url_encode(std::string_view value);

}  // namespace nvdra::k8s
