#pragma once
// The compute-domain driver's start in driver-managed IMEX mode (upstream's default): the start-up
// checks upstream makes (IMEX channel major, the node's clique, with gate IMEXDaemonsWithDNSNames a
// driver >= 570.158.01, the fabric-imex-mgmt capability when there is a clique), the base CDI spec
// that daemon claims name (k8s.compute-domain.nvidia.com/device=all), the ComputeDomain and
// ComputeDomainClique watches, the Node labels (--gpu-clique-label-enabled) and the claim handler.
#include <boost/asio/awaitable.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <memory>
#include <string>

#include "agent/base/result.hpp"
#include "agent/runtime/component.hpp"

namespace nvdra::k8s {
class ApiServer;
class EventRecorder;
}  // namespace nvdra::k8s
namespace nvdra::claims { class CheckpointCommitter; }
namespace nvdra::config { struct Options; }
namespace nvdra::cdi { class FileSpecStore; }

namespace nvdra::drivers {

class ComputeDomainCache;
class NodeLabels;
class DriverManagedClaimHandler;
class DomainCleanup;

struct DriverManagedParts {
  std::shared_ptr<ComputeDomainCache> cache;
  std::shared_ptr<NodeLabels> labels;
  std::unique_ptr<DriverManagedClaimHandler> handler;
  std::unique_ptr<DomainCleanup> cleanup;  // with the cache: domain directories of deleted ComputeDomains
  boost::asio::any_io_executor executor;
  // Ends the clique-label writer. Shared with the writer's completion handler: a writer still in
  // flight when these parts go must not find its cancellation slot destroyed under it.
  std::shared_ptr<boost::asio::cancellation_signal> stop = std::make_shared<boost::asio::cancellation_signal>();
  bool clique_label = false;              // --gpu-clique-label-enabled with a clique: removed at shutdown
  // The clique label's wanted value, shared with its writer, which runs while the Node's label differs.
  struct CliqueLabelWanted {
    std::string value;
    bool writing = false;
  };
  std::shared_ptr<CliqueLabelWanted> clique_wanted = std::make_shared<CliqueLabelWanted>();
  DriverManagedParts();
  ~DriverManagedParts();
};

// --gpu-clique-label-enabled: the node's clique as the label nvidia.com/gpu.clique, at start and each
// time CliqueRefresh sees the clique become known or change (as upstream's 10-minute re-read does). An
// empty clique leaves the label as it is (upstream sets none for an empty id and keeps a known one).
void label_clique(DriverManagedParts& parts, const config::Options& o, const std::string& clique);

boost::asio::awaitable<Result<std::unique_ptr<DriverManagedParts>>> start_driver_managed(
    RunContext& ctx, std::shared_ptr<k8s::ApiServer> claim_reader, claims::CheckpointCommitter& committer,
    cdi::FileSpecStore& specs, k8s::EventRecorder* events);

}  // namespace nvdra::drivers
