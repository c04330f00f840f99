#pragma once
// ServerFacts — what every slice publisher needs from the API server before its first write: the
// server's version, the Node's uid (the slices' ownerReference) and the fields its resource.k8s.io/v1
// serves (server_features.hpp). The agent's two drivers start together and ask the same server the
// same questions: one ServerFacts answers both, so /version, the Node and the 0.5 MB OpenAPI
// document are fetched once per start instead of once per driver. The questions go one after
// another (the document after the /openapi/v3 index that names it), so on one connection: one TLS
// handshake, not one per question. Until the version and the Node are known it retries with
// backoff; an OpenAPI document it cannot read means the version's fields.
//
// A caller that comes while a lookup runs waits for it; one that comes within `reuse_for` of the
// last answer gets that answer; later ones (a publisher restarted much later, perhaps after a server
// upgrade) ask again. Cancellable; io_context thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/api_server.hpp"
#include "k8s/served_fields_cache.hpp"
#include "k8s/server_features.hpp"
#include "k8s/single_flight.hpp"

namespace nvdra::k8s {

struct ServerFactsOptions {
  std::string node_name;
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  std::chrono::milliseconds reuse_for{0};  // 0: every caller not joining a running lookup asks anew
  std::shared_ptr<ServedFieldsCache> served_cache;  // none: the document is read at every lookup
};

class ServerFacts {
 public:
  struct Facts {
    ServerVersion version;
    std::string node_uid;
    ServedFields served;
  };
  struct Stats {
    uint64_t lookups = 0;  // lookups started (the rest of get()'s callers shared one)
    uint64_t documents = 0;  // OpenAPI documents fetched (the others' fields came from the cache)
  };

  ServerFacts(boost::asio::any_io_executor ex, std::shared_ptr<ApiServer> api, ServerFactsOptions options);
  ~ServerFacts();

  boost::asio::awaitable<Facts> get();
  const Stats& stats() const { return stats_; }

 private:
  boost::asio::awaitable<Facts> lookup();
  boost::asio::awaitable<void> identity(Facts& out);
  boost::asio::awaitable<void> openapi(std::optional<ServedFields>& out, std::string& why);
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);

  boost::asio::any_io_executor ex_;
  std::shared_ptr<ApiServer> api_;
  ServerFactsOptions options_;
  std::optional<Facts> last_;
  std::chrono::steady_clock::time_point last_at_{};
  SingleFlight flight_;      // one lookup at a time; callers that come meanwhile wait for it
  uint64_t completed_ = 0;  // lookups answered: a waiter whose lookup answered takes its answer
  Stats stats_;
};

}  // namespace nvdra::k8s
