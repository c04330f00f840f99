#include "k8s/https_api_server.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <cctype>

#include "k8s/api_responses.hpp"
#include "k8s/https_transport.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
using asio::awaitable;

struct HttpsApiServer::Impl {
  std::unique_ptr<HttpsTransport> transport;
  std::shared_ptr<ReconnectPacing> reconnect_pacing;
};

namespace {

void add_query(std::string& target, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  target += target.find('?') == std::string::npos ? '?' : '&';
  target.append(key);
  target += '=';
  target += url_encode(value);
}

template <class T>
ApiResult<T> check(const ApiResult<HttpResponse>& res) {
  if (!res) return res.error();
  return decode_status(res->status, res->body, res->retry_after);
}

bool success(const ApiResult<HttpResponse>& res) { return res && res->status >= 200 && res->status < 300; }

}  // namespace

std::string url_encode(std::string_view value) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string resource_path(const ResourceType& type, const std::string& ns, const std::string& name) {
  std::string p = type.api_prefix;
  if (type.namespaced && !ns.empty()) p += "/namespaces/" + ns;
  p += "/" + type.plural;
  if (!name.empty()) p += "/" + name;
  if (!name.empty() && !type.subresource.empty()) p += "/" + type.subresource;
  return p;
}

HttpsApiServer::HttpsApiServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpsApiServer::~HttpsApiServer() = default;

Result<std::shared_ptr<HttpsApiServer>> HttpsApiServer::create(asio::any_io_executor ex, ClientConfig config) {
  auto pacing = config.reconnect_pacing;
  auto transport = HttpsTransport::create(std::move(ex), std::move(config));
  if (!transport) return transport.error();
  auto impl = std::make_shared<Impl>();
  impl->transport = std::move(*transport);
  impl->reconnect_pacing = std::move(pacing);
  return std::shared_ptr<HttpsApiServer>(new HttpsApiServer(std::move(impl)));
}

std::shared_ptr<ReconnectPacing> HttpsApiServer::reconnect_pacing() const { return impl_->reconnect_pacing; }

HttpsApiServer::Stats HttpsApiServer::stats() const {
  return Stats{impl_->transport->requests(), impl_->transport->connections_opened()};
}

awaitable<ApiResult<std::string>> HttpsApiServer::get(ResourceType type, ObjectKey key) {
  auto res = co_await impl_->transport->exchange(HttpMethod::kGet, resource_path(type, key.ns, key.name), {});
  if (!success(res)) co_return check<std::string>(res);
  co_return std::move(res->body);
}

awaitable<ApiResult<ListResult>> HttpsApiServer::list(ResourceType type, std::string ns, ListOptions options) {
  std::string target = resource_path(type, ns);
  add_query(target, "fieldSelector", options.field_selector);
  add_query(target, "labelSelector", options.label_selector);
  add_query(target, "resourceVersion", options.resource_version);
  if (options.limit > 0) add_query(target, "limit", std::to_string(options.limit));
  add_query(target, "continue", options.continue_token);
  auto res = co_await impl_->transport->exchange(HttpMethod::kGet, std::move(target), {});
  if (!success(res)) co_return check<ListResult>(res);
  co_return parse_list_response(res->body);
}

awaitable<ApiResult<std::unique_ptr<WatchStream>>> HttpsApiServer::watch(ResourceType type, std::string ns,
                                                                          WatchOptions options) {
  std::string target = resource_path(type, ns) + "?watch=1";
  add_query(target, "fieldSelector", options.field_selector);
  add_query(target, "labelSelector", options.label_selector);
  add_query(target, "resourceVersion", options.resource_version);
  if (options.allow_bookmarks) add_query(target, "allowWatchBookmarks", "true");
  add_query(target, "timeoutSeconds", std::to_string(options.timeout.count()));
  co_return co_await impl_->transport->open_watch(std::move(target), options.max_event_bytes, options.timeout);
}

awaitable<ApiResult<std::string>> HttpsApiServer::create(ResourceType type, std::string ns, std::string body) {
  auto res = co_await impl_->transport->exchange(HttpMethod::kPost, resource_path(type, ns), std::move(body));
  if (!success(res)) co_return check<std::string>(res);
  co_return std::move(res->body);
}

awaitable<ApiResult<std::string>> HttpsApiServer::update(ResourceType type, ObjectKey key, std::string body) {
  auto res =
      co_await impl_->transport->exchange(HttpMethod::kPut, resource_path(type, key.ns, key.name), std::move(body));
  if (!success(res)) co_return check<std::string>(res);
  co_return std::move(res->body);
}

awaitable<ApiResult<std::string>> HttpsApiServer::patch(ResourceType type, ObjectKey key, std::string body) {
  auto res =
      co_await impl_->transport->exchange(HttpMethod::kPatch, resource_path(type, key.ns, key.name), std::move(body));
  if (!success(res)) co_return check<std::string>(res);
  co_return std::move(res->body);
}

awaitable<ApiStatus> HttpsApiServer::remove(ResourceType type, ObjectKey key, Preconditions pre) {
  // DeleteOptions with preconditions: the delete only happens if the stored object is still the one we saw.
  boost::json::object options{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!pre.uid.empty() || !pre.resource_version.empty()) {
    boost::json::object preconditions;
    if (!pre.uid.empty()) preconditions["uid"] = pre.uid;
    if (!pre.resource_version.empty()) preconditions["resourceVersion"] = pre.resource_version;
    options["preconditions"] = std::move(preconditions);
  }
  std::string body = boost::json::serialize(options);
  auto res = co_await impl_->transport->exchange(HttpMethod::kDelete, resource_path(type, key.ns, key.name),
                                                  std::move(body));
  if (!success(res)) co_return check<Ok>(res);
  co_return Ok{};
}

awaitable<ApiResult<std::string>> HttpsApiServer::get_path(std::string path) {
  auto res = co_await impl_->transport->exchange(HttpMethod::kGet, path, {});
  if (!success(res)) co_return check<std::string>(res);
  co_return std::move(res->body);
}

awaitable<ApiResult<ServerVersion>> HttpsApiServer::version() {
  auto res = co_await impl_->transport->exchange(HttpMethod::kGet, "/version", {});
  if (!success(res)) co_return check<ServerVersion>(res);
  co_return parse_version_response(res->body);
}

}  // namespace nvdra::k8s
