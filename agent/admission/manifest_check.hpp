#pragma once
// `nvdractl validate`'s core: the opaque configs in a stream of YAML or JSON documents (ResourceClaims,
// ResourceClaimTemplates, Lists and any manifest that embeds a claim spec), checked with the
// webhook's own config check. No cluster, no I/O.
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/config/opaque_config.hpp"

namespace nvdra::admission {

struct ManifestFinding {
  std::size_t document = 0;  // 1-based, in the stream's order
  std::string object;        // "ResourceClaimTemplate default/gpu-mps" (kind, namespace/name as written)
  std::string path;          // field path in the document
  std::string message;
};

struct ManifestReport {
  std::size_t documents = 0;
  std::size_t configs = 0;  // configs of nvdra's drivers checked
  std::vector<ManifestFinding> findings;
};

// Every claim spec (an object whose `devices` holds `config`) anywhere in each document is checked.
// YAML scalars resolve as kubectl's YAML→JSON conversion does (yes/no/on/off are bools, quoted
// scalars stay strings). Text that is not YAML is an error (kInvalidArgument, with line and column).
Result<ManifestReport> check_manifests(std::string_view text, const claims::ConfigGates& gates);

}  // namespace nvdra::admission
