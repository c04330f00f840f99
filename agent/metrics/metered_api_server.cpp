#include "agent/metrics/metered_api_server.hpp"

namespace nvdra::metrics {

MeteredApiServer::MeteredApiServer(std::shared_ptr<k8s::ApiServer> inner, Sink& sink)
    : inner_(std::move(inner)), sink_(sink) {}

template <class T>
void MeteredApiServer::record(const char* verb, const k8s::ApiResult<T>& result, const k8s::ResourceType* type) {
  // A success has no status at hand: the API answers 200 to get/list/update/delete/watch, 201 to create.
  const int status = result.ok() ? (std::string_view(verb) == "create" ? 201 : 200) : result.error().http_status;
  sink_.api_request(verb, status);
  if (type && type->plural == k8s::kResourceSlicesV1.plural) sink_.slice_write(verb, result.ok());
}

boost::asio::awaitable<k8s::ApiResult<std::string>> MeteredApiServer::get(k8s::ResourceType type, k8s::ObjectKey key) {
  auto r = co_await inner_->get(std::move(type), std::move(key));
  record("get", r);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<k8s::ListResult>> MeteredApiServer::list(k8s::ResourceType type, std::string ns,
                                                                               k8s::ListOptions options) {
  auto r = co_await inner_->list(std::move(type), std::move(ns), std::move(options));
  record("list", r);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<std::unique_ptr<k8s::WatchStream>>> MeteredApiServer::watch(
    k8s::ResourceType type, std::string ns, k8s::WatchOptions options) {
  if (!watched_.insert(type.api_prefix + "/" + type.plural).second) sink_.watch_restart(type.plural);
  auto r = co_await inner_->watch(std::move(type), std::move(ns), std::move(options));
  record("watch", r);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<std::string>> MeteredApiServer::create(k8s::ResourceType type, std::string ns,
                                                                             std::string body) {
  const k8s::ResourceType t = type;
  auto r = co_await inner_->create(std::move(type), std::move(ns), std::move(body));
  record("create", r, &t);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<std::string>> MeteredApiServer::update(k8s::ResourceType type, k8s::ObjectKey key,
                                                                             std::string body) {
  const k8s::ResourceType t = type;
  auto r = co_await inner_->update(std::move(type), std::move(key), std::move(body));
  record("update", r, &t);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<std::string>> MeteredApiServer::patch(k8s::ResourceType type, k8s::ObjectKey key,
                                                                            std::string body) {
  const k8s::ResourceType t = type;
  auto r = co_await inner_->patch(std::move(type), std::move(key), std::move(body));
  record("patch", r, &t);
  co_return r;
}

boost::asio::awaitable<k8s::ApiStatus> MeteredApiServer::remove(k8s::ResourceType type, k8s::ObjectKey key,
                                                                k8s::Preconditions pre) {
  const k8s::ResourceType t = type;
  auto r = co_await inner_->remove(std::move(type), std::move(key), std::move(pre));
  record("delete", r, &t);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<k8s::ServerVersion>> MeteredApiServer::version() {
  auto r = co_await inner_->version();
  record("version", r);
  co_return r;
}

boost::asio::awaitable<k8s::ApiResult<std::string>> MeteredApiServer::get_path(std::string path) {
  auto r = co_await inner_->get_path(std::move(path));
  record("get", r);
  co_return r;
}

}  // namespace nvdra::metrics
