#include "agent/claims/fabric_partitions.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <set>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::claims {

namespace asio = boost::asio;

FabricPartitions::FabricPartitions(runtime::WorkerPool& pool, FabricSession session, FabricGates gates,
                                   metrics::Sink& metrics, std::chrono::milliseconds deadline)
    : pool_(pool), session_(std::move(session)), gates_(gates), metrics_(metrics), deadline_(deadline) {}

const fm::Partition* FabricPartitions::partition(unsigned id) const {
  if (!session_.table) return nullptr;
  for (const auto& p : *session_.table)
    if (p.id == id) return &p;
  return nullptr;
}

Result<FabricPlan> FabricPartitions::plan(const std::string& uid, const std::vector<std::string>& gpu_uuids,
                                          const std::optional<FabricTopologyConfig>& config) const {
  FabricRequest req;
  req.config = config;
  for (const auto& u : gpu_uuids) {
    if (auto it = session_.module_of_gpu.find(u); it != session_.module_of_gpu.end()) req.modules.push_back(it->second);
    else req.gpus_without_module.push_back(u);
  }
  std::sort(req.modules.begin(), req.modules.end());
  auto plan = plan_fabric(req, session_.table, session_.unavailable, gates_);
  if (!plan || !plan->activate) return plan;
  // Two claims whose partitions overlap cannot both be prepared: FM would refuse the second
  // activation; say so before anything is recorded, for this claim only.
  for (unsigned id : plan->partitions)
    for (const auto& [other, held] : held_) {
      if (other == uid) continue;
      for (unsigned h : held.partitions) {
        const auto *a = partition(id), *b = partition(h);
        if (h == id || !a || !b || !a->overlaps(*b)) continue;
        return Error{ErrorCode::kFailedPrecondition,
                     "fabric partition " + std::to_string(id) + " " + module_set(a->module_ids()) +
                         " overlaps partition " + std::to_string(h) + " " + module_set(b->module_ids()) +
                         ", which prepared claim " + other + " holds active; Fabric Manager cannot activate both",
                     {}, config ? "fabricTopologyConfig" : ""};
      }
    }
  return plan;
}

asio::awaitable<Status> FabricPartitions::call(std::function<Status(fm::FabricManager&)> fn, std::string what) {
  if (!session_.manager) co_return make_error(ErrorCode::kFailedPrecondition, "fabric manager: " + session_.unavailable);
  // The pool work cannot be interrupted: wait for it or for the deadline, whichever comes first.
  struct Shared {
    explicit Shared(asio::any_io_executor ex) : timer(ex) {}
    asio::steady_timer timer;
    std::optional<Status> result;
  };
  auto ex = co_await asio::this_coro::executor;
  auto shared = std::make_shared<Shared>(ex);
  shared->timer.expires_after(deadline_);
  asio::co_spawn(
      ex,
      [shared, manager = session_.manager, fn = std::move(fn), &pool = pool_]() -> asio::awaitable<void> {
        auto st = co_await pool.run([&] { return fn(*manager); });
        shared->result = std::move(st);
        shared->timer.cancel();
      },
      asio::detached);
  boost::system::error_code ec;
  co_await shared->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (shared->result) co_return std::move(*shared->result);
  co_return make_error(ErrorCode::kUnavailable,
                       "fabric manager: " + what + " did not answer within " + std::to_string(deadline_.count()) + " ms");
}

bool FabricPartitions::held_elsewhere(unsigned id, const std::string& uid) const {
  for (const auto& [other, plan] : held_)
    if (other != uid && std::find(plan.partitions.begin(), plan.partitions.end(), id) != plan.partitions.end())
      return true;
  return false;
}

asio::awaitable<Status> FabricPartitions::activate(const kubelet::ClaimRef& claim, const FabricPlan& plan) {
  if (!plan.activate || plan.partitions.empty()) co_return Status{};
  crash_point("fm.prepare.after-intent-recorded");
  held_[claim.uid] = plan;  // before FM acts: a failed activation is released like a done one
  for (unsigned id : plan.partitions) {
    const auto start = std::chrono::steady_clock::now();
    auto st = co_await call([id](fm::FabricManager& m) { return m.activate(id); },
                            "fmActivateFabricPartition(" + std::to_string(id) + ")");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_.fabric_partition_call("activate", static_cast<bool>(st), seconds);
    if (!st) co_return st;
    crash_point("fm.prepare.after-activate");
    const auto* p = partition(id);
    nvdra::logger("fabric")->info("fabric partition {} {} activated for claim {} ({}) in {:.1f} ms", id,
                                  module_set(p ? p->module_ids() : std::vector<unsigned>{}), claim.describe(), plan.rule,
                                  seconds * 1000);
  }
  metrics_.fabric_partitions_active(active().size());
  if (on_change_) on_change_();
  co_return Status{};
}

asio::awaitable<Status> FabricPartitions::release(const kubelet::ClaimRef& claim) {
  auto it = held_.find(claim.uid);
  if (it == held_.end()) co_return Status{};
  for (unsigned id : it->second.partitions) {
    if (held_elsewhere(id, claim.uid)) continue;
    const auto start = std::chrono::steady_clock::now();
    auto st = co_await call([id](fm::FabricManager& m) { return m.deactivate(id); },
                            "fmDeactivateFabricPartition(" + std::to_string(id) + ")");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_.fabric_partition_call("deactivate", static_cast<bool>(st), seconds);
    if (!st) co_return st;  // the claim keeps holding it: kubelet's retry deactivates again
    crash_point("fm.unprepare.after-deactivate");
    nvdra::logger("fabric")->info("fabric partition {} deactivated: claim {} released it, no other claim holds it", id,
                                  claim.describe());
  }
  held_.erase(claim.uid);
  metrics_.fabric_partitions_active(active().size());
  if (on_change_) on_change_();
  co_return Status{};
}

void FabricPartitions::adopt(const std::string& uid, FabricPlan plan) {
  if (plan.activate && !plan.partitions.empty()) held_[uid] = std::move(plan);
}

asio::awaitable<Status> FabricPartitions::reconcile() {
  if (held_.empty() || !session_.manager) co_return Status{};
  std::set<unsigned> wanted;
  for (const auto& [uid, plan] : held_) wanted.insert(plan.partitions.begin(), plan.partitions.end());
  for (unsigned id : wanted) {
    if (const auto* p = partition(id); p && p->active) continue;  // active in FM's table at start
    auto st = co_await call([id](fm::FabricManager& m) { return m.activate(id); },
                            "fmActivateFabricPartition(" + std::to_string(id) + ")");
    if (!st) co_return st;
    nvdra::logger("fabric")->info("fabric partition {} re-activated: a prepared claim holds it, FM had it inactive", id);
  }
  metrics_.fabric_partitions_active(active().size());
  if (on_change_) on_change_();
  co_return Status{};
}

std::vector<ActivePartition> FabricPartitions::active() const {
  std::map<unsigned, ActivePartition> by_id;
  for (const auto& [uid, plan] : held_)
    for (unsigned id : plan.partitions) {
      auto& a = by_id[id];
      a.id = id;
      if (const auto* p = partition(id)) a.modules = p->module_ids();
      a.claims.push_back(uid);
    }
  std::vector<ActivePartition> out;
  for (auto& [id, a] : by_id) out.push_back(std::move(a));
  return out;
}

}  // namespace nvdra::claims
