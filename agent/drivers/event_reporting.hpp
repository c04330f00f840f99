#pragma once
// What the agent tells operators through Kubernetes Events (events.k8s.io/v1, k8s::EventRecorder):
// the reasons and actions, the references to the objects they are about, and a ClaimHandler
// decorator that reports each failed prepare/unprepare with the message kubelet gets.
#include <functional>
#include <memory>
#include <string>

#include "agent/claims/claim/rollback_report.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "k8s/event_codec.hpp"

namespace nvdra::k8s { class EventRecorder; }

namespace nvdra::drivers {

inline constexpr const char* kReasonFailedPrepare = "FailedPrepare";
inline constexpr const char* kActionPrepare = "PrepareResourceClaim";
inline constexpr const char* kReasonFailedUnprepare = "FailedUnprepare";
inline constexpr const char* kActionUnprepare = "UnprepareResourceClaim";
inline constexpr const char* kReasonCheckpointUnreadable = "CheckpointUnreadable";
inline constexpr const char* kReasonCheckpointReplaced = "CheckpointReplaced";
inline constexpr const char* kActionLoadCheckpoint = "LoadCheckpoint";
inline constexpr const char* kReasonCdiSpecRemoved = "OrphanCDISpecRemoved";  // a claim spec no entry owns
inline constexpr const char* kReasonCdiSpecRewritten = "CDISpecRewritten";     // a prepared claim's, damaged
inline constexpr const char* kActionRecoverCdiSpecs = "RecoverCDISpecs";
inline constexpr const char* kReasonRollbackFailed = "RollbackFailed";  // a failed prepare left something
inline constexpr const char* kReasonCheckpointEntryUnreadable = "CheckpointEntryUnreadable";  // kept aside
inline constexpr const char* kActionRecoverClaims = "RecoverClaims";
inline constexpr const char* kReasonImexUnitDown = "IMEXUnitDown";
inline constexpr const char* kActionCheckImexUnit = "CheckIMEXUnit";

k8s::ObjectRef claim_object(const kubelet::ClaimRef& claim);
k8s::ObjectRef node_object(const std::string& node);
// client-go's reportingInstance is "<controller>-<hostname>"; a DaemonSet pod's hostname is its pod
// name, so the node name (stable across pod restarts) takes its place.
std::string reporting_instance(const std::string& driver, const std::string& node);

// Records a Warning regarding the node (checkpoint, IMEX unit); no-op without a recorder.
void warn_about_node(k8s::EventRecorder* events, const std::string& node, const char* reason, const char* action,
                     std::string note);

// Records a Warning regarding the claim; no-op without a recorder.
void warn_about_claim(k8s::EventRecorder* events, const kubelet::ClaimRef& claim, const char* reason,
                      const char* action, std::string note);

// What a driver tells of a failed rollback (issue #30): a RollbackFailed Warning on the claim, then
// `count` (nvdra_rollback_failures_total{driver}). `events` may be null (no Event then).
claims::RollbackFailed rollback_reporter(k8s::EventRecorder* events, std::function<void()> count);

class EventReportingHandler final : public kubelet::ClaimHandler {
 public:
  EventReportingHandler(kubelet::ClaimHandler& inner, k8s::EventRecorder& events);
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;

 private:
  kubelet::ClaimHandler& inner_;
  k8s::EventRecorder& events_;
};

}  // namespace nvdra::drivers
