#pragma once
// ServedFieldsCache — what ServerFacts learned from the API server's OpenAPI document, kept for the
// next lookup. The /openapi/v3 index names each document with the hash of its content
// ("/openapi/v3/apis/resource.k8s.io/v1?hash=…"), so a lookup whose index names a path the cache
// knows takes the fields from it instead of fetching the ~0.5 MB document again: on every start
// after the first, and on every agent of a fleet coming back after an API server restart. A new
// server version, or a feature gate that changes the document, changes the hash and the document
// is read again. The real one is a file (agent/drivers/served_fields_file.hpp), the test one a map.
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "k8s/server_features.hpp"

namespace nvdra::k8s {

class ServedFieldsCache {
 public:
  virtual ~ServedFieldsCache() = default;
  // The fields stored for exactly this document path (hash included), if any.
  virtual boost::asio::awaitable<std::optional<ServedFields>> load(std::string document_path) = 0;
  // Replaces what is stored; a failure to keep it only costs the next lookup the document.
  virtual boost::asio::awaitable<void> store(std::string document_path, ServedFields fields) = 0;
};

}  // namespace nvdra::k8s
