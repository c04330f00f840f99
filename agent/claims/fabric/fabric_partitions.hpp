#pragma once
// FabricPartitions — the claim pipeline's FabricManager step, kept out of the GpuClaimHandler hub.
// It plans a claim's partitions (fabric_plan.hpp) against FM's table and against the partitions
// other claims hold, activates them once the claim's PrepareStarted entry is durable (the entry's
// status — GPUs and fabricTopologyConfig — is the recorded intent: the same plan is recomputed from
// it after a crash), and deactivates a partition when the last claim holding it lets go.
//
// Durable steps (crash points, test/process/crash_points.txt): fm.prepare.after-intent-recorded (the
// PrepareStarted entry names the claim's GPUs and config), fm.prepare.after-activate (FM has the partition
// active), fm.unprepare.after-deactivate (FM has it inactive; the entry is still there).
//
// FM calls run one at a time on FM's own thread (fm_thread.hpp), each within a deadline: a call past
// it fails the claim, its late answer is dropped, and a hung FM holds only that thread. Connecting at
// start runs there too, bounded the same way; when FM is not reachable the agent retries in the
// background (1 s doubling to 60 s), and until it connects a claim that needs a partition activated
// fails naming FM's state. Thread: io_context only (like the handler).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/metrics_sink.hpp"
#include "agent/claims/fabric/fabric_plan.hpp"
#include "agent/claims/fabric/fm_thread.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "fm/fabric_manager.hpp"

namespace nvdra::claims {

// FM as the agent sees it: the connection and its table, or why there is none.
struct FabricSession {
  std::shared_ptr<fm::FabricManager> manager;         // null: not connected (yet)
  std::optional<std::vector<fm::Partition>> table;    // FM's supported partitions when it connected
  std::string unavailable;                            // why there is no FM ("" when there is)
  std::map<std::string, unsigned> module_of_gpu;      // GPU UUID -> module id (NVML)
  bool nvswitch = false;  // the node has NVSwitches: FM is expected, claims wait for it
};

// What connecting to FM yields (open_fabric_manager + its partition table).
struct FmConnection {
  std::shared_ptr<fm::FabricManager> manager;
  std::vector<fm::Partition> table;
};
using FmOpener = std::function<Result<FmConnection>()>;

struct ActivePartition {
  unsigned id = 0;
  std::vector<unsigned> modules;
  std::vector<std::string> claims;  // UIDs holding it
};

class FabricPartitions {
 public:
  FabricPartitions(boost::asio::any_io_executor executor, FabricSession session, FabricGates gates,
                   metrics::Sink& metrics, std::chrono::milliseconds deadline = std::chrono::seconds(30));
  ~FabricPartitions();

  // Connects once (on FM's thread, within the deadline); the session keeps the error when it fails.
  boost::asio::awaitable<Status> connect(FmOpener open);
  // Retries connect() in the background until it succeeds, then awaits on_connected. Stops with this object.
  using OnConnected = std::function<boost::asio::awaitable<void>()>;
  void keep_connecting(FmOpener open, OnConnected on_connected);
  const FabricSession& session() const { return session_; }

  bool enabled() const { return gates_.any(); }
  // The claim's partitions, or a per-claim error (no FM, no match, overlap with another claim's).
  Result<FabricPlan> plan(const std::string& uid, const std::vector<std::string>& gpu_uuids,
                          const std::optional<FabricTopologyConfig>& config) const;
  // Reserves the plan's partitions for the claim right after plan(), with no suspension between, so
  // a concurrent prepare of an overlapping claim is refused by plan() too; forget() drops it when
  // the claim fails before activate() (its PrepareStarted commit failed). FullPassthrough plans
  // (activate false) are held too: the partition is the guest's, no other claim may activate over it.
  void hold(const std::string& uid, const FabricPlan& plan) { adopt(uid, plan); }
  void forget(const std::string& uid) { held_.erase(uid); }
  // Holds `plan` for the claim and activates its partitions not yet active for another claim (none
  // for a FullPassthrough plan: held only).
  boost::asio::awaitable<Status> activate(const kubelet::ClaimRef& claim, const FabricPlan& plan);
  // Lets go of the claim's partitions; deactivates those no other claim holds. No-op if it holds none.
  boost::asio::awaitable<Status> release(const kubelet::ClaimRef& claim);
  // Start-up: the claim (PrepareStarted or PrepareCompleted in the checkpoint) holds `plan`.
  void adopt(const std::string& uid, FabricPlan plan);
  // Start-up, after adopt(): activates partitions held by completed claims that FM lost (an FM
  // restart), deactivates none (others may have been activated by an administrator).
  boost::asio::awaitable<Status> reconcile();

  std::vector<ActivePartition> active() const;
  void on_change(std::function<void()> fn) { on_change_ = std::move(fn); }

 private:
  template <class T>
  boost::asio::awaitable<std::optional<T>> on_fm_thread(std::function<T()> fn);
  boost::asio::awaitable<Status> call(std::function<Status(fm::FabricManager&)> fn, std::string what);
  boost::asio::awaitable<void> retry(FmOpener open, OnConnected on_connected);
  bool held_elsewhere(unsigned id, const std::string& uid) const;  // by another activating plan
  const fm::Partition* partition(unsigned id) const;
  std::string overlaps_held(const std::string& uid, unsigned id, bool activate) const;

  FabricSession session_;
  FabricGates gates_;
  metrics::Sink& metrics_;
  std::chrono::milliseconds deadline_;
  std::map<std::string, FabricPlan> held_;  // claim UID -> its plan (activating or FullPassthrough)
  std::function<void()> on_change_;
  boost::asio::steady_timer retry_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for coroutines that outlive a wait
  std::unique_ptr<FmThread> thread_;
};

}  // namespace nvdra::claims
