#pragma once
// ClaimHandler — the seam between the kubelet DRA service and the code that prepares devices
// (issue "GPU claims"; one implementation per driver). The kubelet side (DraService) owns the
// protocol: it converts v1 and v1beta1 requests, fans a call's claims out concurrently, serialises
// calls for the same claim UID and puts each claim's outcome in the response map. A handler sees one
// claim at a time and no protobuf.
//
// Contract:
//  - Called on the io_context thread; blocking work must go to the WorkerPool and be awaited.
//  - prepare/unprepare for one UID are never run concurrently with each other; different UIDs may
//    run at the same time.
//  - Both must be idempotent: kubelet repeats whole batches after any failure, and unprepare must
//    succeed for a claim that is not (or no longer) prepared.
//  - A returned Error becomes that claim's `error` string (Error::describe()); it never fails the
//    other claims of the call. An exception is treated the same way and logged as a bug.
//  - Cancellation (client cancel, kubelet's 45 s deadline, agent shutdown) arrives as asio
//    cancellation of the awaitable; a handler must leave the node consistent when it stops early.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::kubelet {

// The claim as kubelet names it in the request.
struct ClaimRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  // The call's deadline as this server sees it (kubelet's gRPC deadline for NodePrepareResources /
  // NodeUnprepareResources); empty when the client set none. A handler that waits (a channel's
  // readiness) answers before it, so that kubelet reads the reason instead of DEADLINE_EXCEEDED.
  std::optional<std::chrono::steady_clock::time_point> deadline{};
  // "ns/name (uid)": the form Error::claim and log lines use.
  std::string describe() const { return namespace_name + "/" + name + " (" + uid + ")"; }
  // The claim's identity: the deadline is the call's, not the claim's.
  bool operator==(const ClaimRef& o) const {
    return namespace_name == o.namespace_name && name == o.name && uid == o.uid;
  }
};

// One device kubelet must make available to the claim's containers.
struct PreparedDevice {
  std::vector<std::string> request_names;  // base request names; empty = all requests of the claim
  std::string pool_name;                   // NVIDIA convention: the node name
  std::string device_name;
  std::vector<std::string> cdi_device_ids;  // fully qualified, "vendor/class=name"
  std::optional<std::string> share_id;      // only for a share of a multi-allocatable device (v1 only)
  bool operator==(const PreparedDevice&) const = default;
};

class ClaimHandler {
 public:
  virtual ~ClaimHandler() = default;
  virtual boost::asio::awaitable<Result<std::vector<PreparedDevice>>> prepare(ClaimRef claim) = 0;
  virtual boost::asio::awaitable<Status> unprepare(ClaimRef claim) = 0;
};

}  // namespace nvdra::kubelet
