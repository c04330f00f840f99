#pragma once
// NodeLabels — the Node labels the compute-domain driver owns in driver-managed mode
// (resource.nvidia.com/computeDomain, nvidia.com/gpu.clique), written as patches of
// metadata.labels only: unlike upstream's GET+Update, a patch never fails on a resourceVersion
// conflict with kubelet's own Node writes. The domain label's value is read once (load(), at start,
// so a node taken over from upstream keeps its holder) and then tracked through this object's own
// writes: no GET per prepare. Executor thread only.
#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/base/result.hpp"

namespace nvdra::k8s { class ApiServer; }

namespace nvdra::drivers {

class NodeLabels {
 public:
  NodeLabels(std::shared_ptr<k8s::ApiServer> api, std::string node);

  // Reads the Node's labels (once: later calls return at once).
  boost::asio::awaitable<Status> load();
  bool loaded() const { return loaded_; }
  // The label's value as last read or written; nullopt when absent.
  std::optional<std::string> value(const std::string& key) const;
  // Sets (value) or removes (nullopt) one label with a merge patch.
  boost::asio::awaitable<Status> write(std::string key, std::optional<std::string> value);

  uint64_t writes() const { return writes_; }

 private:
  std::shared_ptr<k8s::ApiServer> api_;
  std::string node_;
  std::map<std::string, std::string> labels_;
  uint64_t writes_ = 0;
  bool loaded_ = false;
};

}  // namespace nvdra::drivers
