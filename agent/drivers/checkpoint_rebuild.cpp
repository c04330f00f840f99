#include "agent/drivers/checkpoint_rebuild.hpp"

#include <simdjson.h>

#include <map>
#include <optional>

#include "agent/claims/gpu_claim_handler.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_store.hpp"
#include "k8s/api_server.hpp"

namespace nvdra::drivers {

std::vector<std::string> claim_uids_of_specs(const std::vector<std::string>& files, std::string_view vendor) {
  const std::string prefix = cdi::transient_spec_name(vendor, cdi::kClaimClass, "");
  std::vector<std::string> out;
  for (std::string_view file : files) {
    if (!file.starts_with(prefix)) continue;
    for (std::string_view ext : {cdi::kSpecExtension, cdi::kLegacySpecExtension})
      if (file.size() > prefix.size() + ext.size() && file.ends_with(ext))
        out.emplace_back(file.substr(prefix.size(), file.size() - prefix.size() - ext.size()));
  }
  return out;
}

boost::asio::awaitable<RebuildReport> rebuild_gpu_claims(runtime::WorkerPool& pool, k8s::ApiServer* api,
                                                         cdi::SpecStore& specs, claims::GpuClaimHandler& handler) {
  RebuildReport report;
  auto listed = co_await pool.run([&specs] { return std::optional(specs.list()); });
  if (!*listed) {
    report.errors.push_back(listed->error());
    co_return report;
  }
  const auto uids = claim_uids_of_specs(**listed, cdi::kGpuVendor);
  if (uids.empty()) co_return report;
  if (!api) {
    report.errors.push_back(make_error(ErrorCode::kUnavailable,
                                       "no Kubernetes API server configured: the claims of " +
                                           std::to_string(uids.size()) + " CDI spec(s) cannot be rebuilt"));
    co_return report;
  }
  // One list of every namespace's claims (the agent's ClusterRole has list): only the UID is on the node.
  std::map<std::string, kubelet::ClaimRef> by_uid;
  k8s::ListOptions options;
  do {
    auto page = co_await api->list(k8s::kResourceClaimsV1, "", options);
    if (!page) {
      Error e = page.error().to_error();
      e.message = "cannot list ResourceClaims to rebuild the checkpoint: " + e.message;
      report.errors.push_back(std::move(e));
      co_return report;
    }
    simdjson::ondemand::parser parser;
    for (const auto& item : page->items) {
      simdjson::padded_string padded(item);
      auto doc = parser.iterate(padded);
      simdjson::ondemand::object meta;
      std::string_view uid, name, ns;
      if (doc["metadata"].get(meta) || meta["uid"].get(uid) || meta["name"].get(name) || meta["namespace"].get(ns))
        continue;
      by_uid[std::string(uid)] = kubelet::ClaimRef{std::string(ns), std::string(name), std::string(uid)};
    }
    options.continue_token = page->continue_token;
  } while (!options.continue_token.empty());
  for (const auto& uid : uids) {
    auto it = by_uid.find(uid);
    if (it == by_uid.end()) {
      Error e = make_error(ErrorCode::kNotFound, "claim " + uid + " of a CDI spec is not in the API: not rebuilt");
      report.errors.push_back(std::move(e));
      continue;
    }
    if (auto st = co_await handler.adopt(it->second); st) report.adopted.push_back(it->second.describe());
    else report.errors.push_back(st.error());
  }
  co_return report;
}

}  // namespace nvdra::drivers
