#pragma once
// A driver's checkpoint at start-up: <plugin data dir>/checkpoint.json opened (its lock taken),
// loaded and checked against the boot id (claims::reconcile_boot_id), saved when that changed it.
//
// While another agent instance holds the lock (a DaemonSet update whose old pod has not exited
// yet), this waits and retries instead of failing: two writers would corrupt the checkpoint, and
// upstream's update strategy (maxUnavailable, no surge) stops the old pod first. Said once in the
// log and the status; cancellable.
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/claims/checkpoint/checkpoint_startup.hpp"
#include "agent/runtime/component.hpp"

namespace nvdra::k8s { class EventRecorder; }

namespace nvdra::drivers {

struct DriverCheckpoint {
  std::unique_ptr<claims::FileCheckpointStore> store;
  claims::StartupCheckpoint startup;
  // A checkpoint that was corrupt, of an unknown version or unreadable: where it went and why. The
  // driver starts from an empty one and rebuilds what it can (the GPU driver: rebuild_from_specs).
  std::string moved_aside;
  std::string problem;
};

// A bad checkpoint file (corrupt, truncated, unknown version, unreadable) is moved aside with a
// timestamp and the driver starts empty; one of another boot with claims in it is replaced (as
// upstream) and a copy kept. Either is a log line and a Warning Event regarding the node (reason
// CheckpointReplaced) through `events`, when there is one. A checkpoint that cannot be opened, or
// moved aside, is an error and a Warning Event (reason CheckpointUnreadable).
boost::asio::awaitable<Result<DriverCheckpoint>> open_driver_checkpoint(RunContext& ctx, std::string driver,
                                                                        std::string dir,
                                                                        k8s::EventRecorder* events = nullptr);

}  // namespace nvdra::drivers
