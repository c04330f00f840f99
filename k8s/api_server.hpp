#pragma once
// ApiServer — the seam between the agent and the Kubernetes API server.
//
// Contract:
//  * Every operation is a coroutine run on the caller's executor; none blocks the thread.
//  * Every operation can be cancelled (asio per-operation cancellation / parent cancellation);
//    a cancelled request closes its connection and throws boost::system::system_error(operation_aborted).
//  * Failures come back as ApiError values (the server's Status decoded: code, reason, message,
//    Retry-After); exceptions only for cancellation and bugs. The seam does not log.
//  * Objects cross the seam as raw JSON text: writers build it with Boost.JSON, readers parse it with
//    simdjson. This keeps the seam generic (ResourceSlices, ResourceClaims, Nodes, Leases, CRDs).
//  * The real implementation (HttpsApiServer) applies the client-side QPS/burst limit to every
//    request and every watch start.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/reconnect_pacing.hpp"
#include "k8s/api_error.hpp"

namespace nvdra::k8s {

// A collection of objects: api_prefix + ["/namespaces/<ns>"] + "/" + plural. An object's path is
// that + "/" + name [+ "/" + subresource] ("status": writes only the status of a CRD with one).
struct ResourceType {
  std::string api_prefix;  // "/api/v1" or "/apis/<group>/<version>"
  std::string plural;      // "resourceslices"
  bool namespaced = false;
  std::string subresource;  // empty, or "status"
};

inline const ResourceType kResourceSlicesV1{"/apis/resource.k8s.io/v1", "resourceslices", false};
inline const ResourceType kResourceClaimsV1{"/apis/resource.k8s.io/v1", "resourceclaims", true};
inline const ResourceType kNodesV1{"/api/v1", "nodes", false};
inline const ResourceType kLeasesV1{"/apis/coordination.k8s.io/v1", "leases", true};
inline const ResourceType kResourceClaimTemplatesV1{"/apis/resource.k8s.io/v1", "resourceclaimtemplates", true};
inline const ResourceType kComputeDomainsV1beta1{"/apis/resource.nvidia.com/v1beta1", "computedomains", true};
inline const ResourceType kEventsV1{"/apis/events.k8s.io/v1", "events", true};
inline const ResourceType kComputeDomainsStatusV1beta1{"/apis/resource.nvidia.com/v1beta1", "computedomains", true,
                                                       "status"};

struct ObjectKey {
  std::string ns;  // empty for cluster-scoped objects
  std::string name;
};

struct ListOptions {
  std::string field_selector;  // "spec.nodeName=n1,spec.driver=gpu.nvidia.com"
  std::string label_selector;
  std::string resource_version;
  int64_t limit = 0;  // 0: no paging
  std::string continue_token;
};

struct ListResult {
  std::vector<std::string> items;  // raw JSON of each object
  std::string resource_version;    // the list's metadata.resourceVersion (start a watch from it)
  std::string continue_token;
};

struct WatchOptions {
  std::string field_selector;
  std::string label_selector;
  std::string resource_version;  // start after this version
  bool allow_bookmarks = true;
  std::chrono::seconds timeout{300};  // server-side timeoutSeconds; the stream then ends cleanly
  std::size_t max_event_bytes = std::size_t{16} << 20;  // larger events are dropped with an error
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  std::string object;  // raw JSON of "object" (a metav1.Status for kError)
  std::string name;
  std::string ns;
  std::string resource_version;
};

// One open watch. next() yields events in order; std::nullopt when the server ended the stream
// (timeoutSeconds reached). Errors: a dropped connection (reason ConnectionFailed/StreamEnded, the
// stream is dead), an oversized or malformed event (reason EventTooLarge/BadResponse; the stream
// stays usable and the next call continues after it). An ERROR event is returned as an event.
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  virtual boost::asio::awaitable<ApiResult<std::optional<WatchEvent>>> next() = 0;
};

// Delete preconditions: the delete only happens if the stored object still has these.
struct Preconditions {
  std::string uid;
  std::string resource_version;
};

struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string git_version;  // "v1.35.2"
  bool at_least(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
};

class ApiServer {
 public:
  virtual ~ApiServer() = default;

  virtual boost::asio::awaitable<ApiResult<std::string>> get(ResourceType type, ObjectKey key) = 0;
  virtual boost::asio::awaitable<ApiResult<ListResult>> list(ResourceType type, std::string ns,
                                                             ListOptions options) = 0;
  virtual boost::asio::awaitable<ApiResult<std::unique_ptr<WatchStream>>> watch(ResourceType type, std::string ns,
                                                                                WatchOptions options) = 0;
  // POST; `ns` is ignored for cluster-scoped types. Returns the stored object.
  virtual boost::asio::awaitable<ApiResult<std::string>> create(ResourceType type, std::string ns,
                                                                std::string body) = 0;
  // PUT of the full object (metadata.resourceVersion in the body makes it conditional → 409).
  virtual boost::asio::awaitable<ApiResult<std::string>> update(ResourceType type, ObjectKey key,
                                                                std::string body) = 0;
  // PATCH with a strategic merge patch (application/strategic-merge-patch+json), as client-go's
  // event sink sends an Event's series. Returns the stored object.
  virtual boost::asio::awaitable<ApiResult<std::string>> patch(ResourceType type, ObjectKey key,
                                                               std::string body) = 0;
  virtual boost::asio::awaitable<ApiStatus> remove(ResourceType type, ObjectKey key, Preconditions pre) = 0;
  // GET /version.
  virtual boost::asio::awaitable<ApiResult<ServerVersion>> version() = 0;
  // When the reflectors on this client reconnect after a dropped watch (one ReconnectPacing for
  // the whole agent, from --api-reconnect-spread). None: the reflector's backoff alone.
  virtual std::shared_ptr<ReconnectPacing> reconnect_pacing() const { return nullptr; }
  // GET of a non-resource path (the OpenAPI v3 documents the publisher reads to learn which fields
  // the server serves). Implementations without it answer 404, which callers treat as "unknown".
  virtual boost::asio::awaitable<ApiResult<std::string>> get_path(std::string path) {
    ApiError e = make_local_error(kReasonBadResponse, "GET " + path + ": not supported by this client");
    e.http_status = 404;
    co_return e;
  }
};

}  // namespace nvdra::k8s
