#include "agent/drivers/event_reporting.hpp"

#include "k8s/event_recorder.hpp"

namespace nvdra::drivers {

k8s::ObjectRef claim_object(const kubelet::ClaimRef& claim) {
  return k8s::ObjectRef{"resource.k8s.io/v1", "ResourceClaim", claim.namespace_name, claim.name, claim.uid, {}};
}

k8s::ObjectRef node_object(const std::string& node) { return k8s::ObjectRef{"v1", "Node", {}, node, {}, {}}; }

std::string reporting_instance(const std::string& driver, const std::string& node) { return driver + "-" + node; }

void warn_about_node(k8s::EventRecorder* events, const std::string& node, const char* reason, const char* action,
                     std::string note) {
  if (!events) return;
  events->record(k8s::EventInfo{node_object(node), k8s::kEventTypeWarning, reason, action, std::move(note)});
}

void warn_about_claim(k8s::EventRecorder* events, const kubelet::ClaimRef& claim, const char* reason,
                      const char* action, std::string note) {
  if (!events) return;
  events->record(k8s::EventInfo{claim_object(claim), k8s::kEventTypeWarning, reason, action, std::move(note)});
}

claims::RollbackFailed rollback_reporter(k8s::EventRecorder* events, std::function<void()> count) {
  return [events, count = std::move(count)](const kubelet::ClaimRef& claim, const std::string& left) {
    warn_about_claim(events, claim, kReasonRollbackFailed, kActionPrepare, left);
    if (count) count();
  };
}

EventReportingHandler::EventReportingHandler(kubelet::ClaimHandler& inner, k8s::EventRecorder& events)
    : inner_(inner), events_(events) {}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> EventReportingHandler::prepare(
    kubelet::ClaimRef claim) {
  auto result = co_await inner_.prepare(claim);
  // The note is the claim's error exactly as kubelet receives it (DraService: Error::describe()).
  if (!result)
    events_.record(k8s::EventInfo{claim_object(claim), k8s::kEventTypeWarning, kReasonFailedPrepare, kActionPrepare,
                                  result.error().describe()});
  co_return result;
}

boost::asio::awaitable<Status> EventReportingHandler::unprepare(kubelet::ClaimRef claim) {
  auto result = co_await inner_.unprepare(claim);
  if (!result)
    events_.record(k8s::EventInfo{claim_object(claim), k8s::kEventTypeWarning, kReasonFailedUnprepare,
                                  kActionUnprepare, result.error().describe()});
  co_return result;
}

}  // namespace nvdra::drivers
