#include "k8s/server_facts.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>

#include "agent/base/backoff.hpp"
#include "agent/base/log.hpp"
#include "k8s/object_meta.hpp"

namespace nvdra::k8s {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

awaitable<void> fetch_version(ApiServer& api, std::optional<ServerVersion>& out) {
  if (out) co_return;
  auto v = co_await api.version();
  if (v) {
    out = *v;
  } else {
    nvdra::logger("k8s")->warn("GET /version failed: {}; retrying", v.error().describe());
  }
}

awaitable<void> fetch_node_uid(ApiServer& api, const std::string& node_name, std::string& out) {
  if (!out.empty()) co_return;
  ObjectKey key;  // a named local: GCC 12 double-destroys braced temporaries passed to coroutines
  key.name = node_name;
  auto node = co_await api.get(kNodesV1, key);
  if (!node) {
    nvdra::logger("k8s")->warn("GET node {} failed (needed for the slices' ownerReference): {}; retrying", node_name,
                               node.error().describe());
    co_return;
  }
  if (auto meta = read_object_meta(*node)) out = meta->uid;
}

}  // namespace

ServerFacts::ServerFacts(asio::any_io_executor ex, std::shared_ptr<ApiServer> api, ServerFactsOptions options)
    : ex_(std::move(ex)), api_(std::move(api)), options_(std::move(options)), flight_(ex_) {}

ServerFacts::~ServerFacts() = default;

awaitable<void> ServerFacts::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(ex_, d);
  co_await timer.async_wait(asio::use_awaitable);
}

awaitable<ServerFacts::Facts> ServerFacts::get() {
  const uint64_t seen = completed_;
  co_await flight_.wait_idle();
  // Joined a lookup that answered, or one answered recently enough.
  if (last_ && (completed_ != seen || std::chrono::steady_clock::now() - last_at_ < options_.reuse_for)) co_return *last_;
  // Also when the lookup is cancelled (its driver stopped): a waiter then looks up itself.
  auto run = flight_.begin();
  Facts facts = co_await lookup();
  last_ = facts;
  last_at_ = std::chrono::steady_clock::now();
  ++completed_;
  co_return facts;
}

awaitable<ServerFacts::Facts> ServerFacts::lookup() {
  ++stats_.lookups;
  Facts facts;
  co_await identity(facts);
  // Asked after the identity, so on the connection it used: one TLS handshake for the three
  // questions where asking them at once took three. A start's handshakes were most of the API
  // server's CPU for it (a fleet's agents start together), and on the start's path (issue #33).
  std::optional<ServedFields> served;
  std::string why;
  co_await openapi(served, why);
  if (served) {
    facts.served = *served;
  } else {
    facts.served = served_fields_by_version(facts.version);
    nvdra::logger("k8s")->warn("{}; assuming the fields of {}", why, facts.version.git_version);
  }
  co_return facts;
}

// The version, then the Node: one request at a time, each asked until answered (with backoff).
awaitable<void> ServerFacts::identity(Facts& out) {
  Backoff backoff(options_.backoff_base, options_.backoff_cap);
  std::optional<ServerVersion> version;
  for (;;) {
    co_await fetch_version(*api_, version);
    if (version) co_await fetch_node_uid(*api_, options_.node_name, out.node_uid);
    if (version && !out.node_uid.empty()) break;
    co_await sleep(backoff.next());
  }
  out.version = *version;
}

awaitable<void> ServerFacts::openapi(std::optional<ServedFields>& out, std::string& why) {
  auto index = co_await api_->get_path("/openapi/v3");
  if (!index) {
    why = "GET /openapi/v3 failed (" + index.error().describe() + ")";
    co_return;
  }
  auto path = openapi_document_path(*index, "resource.k8s.io/v1");
  if (!path) {
    why = path.error().describe();
    co_return;
  }
  if (options_.served_cache) {
    if (auto known = co_await options_.served_cache->load(*path)) {
      out = *known;
      co_return;
    }
  }
  ++stats_.documents;
  auto document = co_await api_->get_path(*path);
  if (!document) {
    why = "GET " + *path + " failed (" + document.error().describe() + ")";
    co_return;
  }
  auto served = served_fields_from_openapi(*document);
  if (!served) {
    why = served.error().describe();
    co_return;
  }
  out = *served;
  if (options_.served_cache) co_await options_.served_cache->store(*path, *served);
}

}  // namespace nvdra::k8s
