#pragma once
// The driver-managed compute-domain steps (DomainPrepare, domain_pipeline.hpp). Apply order — daemon
// claims: DomainDirectoryStep, then the claim spec; channel claims: NodeLabelStep, ReadinessStep, then the
// claim spec (DriverManagedClaimHandler lists them). A failed driver-managed prepare is not rolled back:
// kubelet prepares again over it, and the label must stay meanwhile (the daemon DaemonSet's nodeSelector);
// the undos serve unprepare.
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <string>

#include "agent/drivers/domain_pipeline.hpp"

namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

class NodeLabels;

// <plugin dir>/domains/<uid>/ (0755) with imexd.cfg.tmpl (0644). Undo: nothing (upstream's unprepare
// deletes nothing; the directory goes with its ComputeDomain, DriverManagedClaimHandler::domain_gone).
class DomainDirectoryStep final : public DomainStep {
 public:
  DomainDirectoryStep(runtime::WorkerPool& pool, std::string plugin_dir);
  std::string_view name() const override { return "domain-directory"; }
  Status plan(DomainPrepare&) const override { return {}; }
  boost::asio::awaitable<Status> apply(DomainPrepare& c) override;
  boost::asio::awaitable<Status> undo(DomainPrepare&) override;
  boost::asio::awaitable<Status> recover(DomainPrepare&) override;

 private:
  runtime::WorkerPool& pool_;
  std::string plugin_dir_;
};

// resource.nvidia.com/computeDomain=<uid> on the Node (refused when another domain holds it). Undo: the
// label goes only when it names the claim's domain (DomainPrepare::domain_id; empty: a daemon claim's).
class NodeLabelStep final : public DomainStep {
 public:
  explicit NodeLabelStep(NodeLabels* labels) : labels_(labels) {}
  std::string_view name() const override { return "node-label"; }
  Status plan(DomainPrepare&) const override { return {}; }
  boost::asio::awaitable<Status> apply(DomainPrepare& c) override;
  boost::asio::awaitable<Status> undo(DomainPrepare& c) override;
  boost::asio::awaitable<Status> recover(DomainPrepare&) override;

 private:
  NodeLabels* labels_;
};

// This node's IMEX daemon Ready for the domain (the handler's wait on its ComputeDomain watches).
class ReadinessStep final : public DomainStep {
 public:
  using Wait = std::function<boost::asio::awaitable<Status>(DomainPrepare&)>;
  explicit ReadinessStep(Wait wait) : wait_(std::move(wait)) {}
  std::string_view name() const override { return "imex-readiness"; }
  Status plan(DomainPrepare&) const override { return {}; }
  boost::asio::awaitable<Status> apply(DomainPrepare& c) override { co_return co_await wait_(c); }
  boost::asio::awaitable<Status> undo(DomainPrepare&) override { co_return Status{}; }
  boost::asio::awaitable<Status> recover(DomainPrepare&) override { co_return Status{}; }

 private:
  Wait wait_;
};

}  // namespace nvdra::drivers
