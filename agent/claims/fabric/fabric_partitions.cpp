#include "agent/claims/fabric/fabric_partitions.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <set>

#include "agent/base/crash_point.hpp"
#include "agent/base/log.hpp"

namespace nvdra::claims {

namespace asio = boost::asio;

FabricPartitions::FabricPartitions(asio::any_io_executor executor, FabricSession session, FabricGates gates,
                                   metrics::Sink& metrics, std::chrono::milliseconds deadline)
    : session_(std::move(session)),
      gates_(gates),
      metrics_(metrics),
      deadline_(deadline),
      retry_timer_(std::move(executor)),
      thread_(std::make_unique<FmThread>()) {}

FabricPartitions::~FabricPartitions() { *alive_ = false; }

// fn on FM's thread; its result, or nullopt when it did not come within the deadline. Nothing of
// `this` is touched after the wait: the caller may be gone by then (a background retry).
template <class T>
asio::awaitable<std::optional<T>> FabricPartitions::on_fm_thread(std::function<T()> fn) {
  struct Shared {
    explicit Shared(asio::any_io_executor ex) : timer(ex) {}
    asio::steady_timer timer;
    std::optional<T> result;
  };
  auto ex = co_await asio::this_coro::executor;
  auto shared = std::make_shared<Shared>(ex);
  shared->timer.expires_after(deadline_);
  thread_->post([shared, ex, fn = std::move(fn)] {
    auto out = std::make_shared<T>(fn());
    asio::post(ex, [shared, out] {
      shared->result = std::move(*out);
      shared->timer.cancel();
    });
  });
  boost::system::error_code ec;
  co_await shared->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return std::move(shared->result);
}

asio::awaitable<Status> FabricPartitions::connect(FmOpener open) {
  auto alive = alive_;
  const auto deadline = deadline_;
  auto got = co_await on_fm_thread<Result<FmConnection>>(std::move(open));
  if (!*alive) co_return make_error(ErrorCode::kCancelled, "fabric manager: the driver stopped while connecting");
  if (!got) {
    session_.unavailable = "fabric manager: fmConnect / fmGetSupportedFabricPartitions did not answer within " +
                           std::to_string(deadline.count()) + " ms";
    co_return make_error(ErrorCode::kUnavailable, session_.unavailable);
  }
  if (!*got) {
    session_.unavailable = got->error().message;
    co_return got->error();
  }
  session_.manager = std::move((*got)->manager);
  session_.table = std::move((*got)->table);
  session_.unavailable.clear();
  std::size_t active = 0;
  for (const auto& p : *session_.table) active += p.active ? 1 : 0;
  nvdra::logger("fabric")->info("fabric manager endpoint={} partitions={} active={}", session_.manager->endpoint(),
                                session_.table->size(), active);
  co_return Status{};
}

void FabricPartitions::keep_connecting(FmOpener open, OnConnected on_connected) {
  asio::co_spawn(retry_timer_.get_executor(), retry(std::move(open), std::move(on_connected)), asio::detached);
}

asio::awaitable<void> FabricPartitions::retry(FmOpener open, OnConnected on_connected) {
  auto alive = alive_;
  auto delay = std::chrono::seconds(1);
  for (;;) {
    retry_timer_.expires_after(delay);
    boost::system::error_code ec;
    co_await retry_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!*alive || ec) co_return;  // destroyed (the timer went with it) or cancelled
    auto st = co_await connect(open);
    if (!*alive) co_return;
    if (st) {
      nvdra::logger("fabric")->info("fabric manager connected after retrying: claims needing a partition proceed");
      if (on_connected) co_await on_connected();  // still alive: nothing was suspended since the check
      co_return;
    }
    nvdra::logger("fabric")->warn("fabric manager still unavailable, retrying in {} s: {}", delay.count(),
                                  st.error().message);
    delay = std::min<std::chrono::seconds>(delay * 2, std::chrono::seconds(60));
  }
}

const fm::Partition* FabricPartitions::partition(unsigned id) const {
  if (!session_.table) return nullptr;
  for (const auto& p : *session_.table)
    if (p.id == id) return &p;
  return nullptr;
}

// Every held partition that `id` overlaps, named with its claim, in partition then claim order (two
// claims prepared together may each hold one: the answer must not depend on which came first); "" if none.
std::string FabricPartitions::overlaps_held(const std::string& uid, unsigned id, bool activate) const {
  const auto* a = partition(id);
  std::vector<std::pair<unsigned, std::string>> found;  // (held partition, what holds it)
  for (const auto& [other, held] : held_) {
    if (other == uid || !a) continue;
    for (unsigned h : held.partitions) {
      const auto* b = partition(h);
      if (!b || !a->overlaps(*b) || (h == id && held.activate == activate)) continue;
      found.emplace_back(h, "partition " + std::to_string(h) + " " + module_set(b->module_ids()) +
                                ", which prepared claim " + other +
                                (held.activate ? " holds active" : " holds for its guest (FullPassthrough)"));
    }
  }
  std::sort(found.begin(), found.end());
  std::string out;
  for (const auto& [h, text] : found) out += (out.empty() ? "" : ", and ") + text;
  if (!out.empty()) out += found.size() == 1 ? "; Fabric Manager cannot activate both" : "; Fabric Manager cannot activate them together";
  return out;
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
  auto plan = plan_fabric(req, session_.table, session_.unavailable, gates_, session_.nvswitch);
  if (!plan || plan->partitions.empty()) return plan;
  // Two claims whose partitions overlap cannot both be prepared: FM would refuse the second
  // activation, or activate over a partition a guest owns (FullPassthrough); say so before anything
  // is recorded, for this claim only. The same partition may be shared by claims of one kind.
  for (unsigned id : plan->partitions)
    if (auto clash = overlaps_held(uid, id, plan->activate); !clash.empty())
      return Error{ErrorCode::kFailedPrecondition,
                   "fabric partition " + std::to_string(id) + " " + module_set(partition(id)->module_ids()) +
                       " overlaps " + clash,
                   {}, config ? "fabricTopologyConfig" : ""};
  return plan;
}

asio::awaitable<Status> FabricPartitions::call(std::function<Status(fm::FabricManager&)> fn, std::string what) {
  if (!session_.manager) co_return make_error(ErrorCode::kFailedPrecondition, "fabric manager: " + session_.unavailable);
  const auto deadline = deadline_;
  auto st = co_await on_fm_thread<Status>([manager = session_.manager, fn = std::move(fn)] { return fn(*manager); });
  if (st) co_return std::move(*st);
  co_return make_error(ErrorCode::kUnavailable,
                       "fabric manager: " + what + " did not answer within " + std::to_string(deadline.count()) + " ms");
}

bool FabricPartitions::held_elsewhere(unsigned id, const std::string& uid) const {
  for (const auto& [other, plan] : held_)
    if (other != uid && plan.activate && std::find(plan.partitions.begin(), plan.partitions.end(), id) != plan.partitions.end())
      return true;
  return false;
}

asio::awaitable<Status> FabricPartitions::activate(const kubelet::ClaimRef& claim, const FabricPlan& plan) {
  if (plan.partitions.empty()) co_return Status{};
  held_[claim.uid] = plan;  // before FM acts: a failed activation is released like a done one
  if (!plan.activate) {
    nvdra::logger("fabric")->info("fabric partitions {} held for claim {} ({}): the guest activates them",
                                  module_set(plan.partitions), claim.describe(), plan.rule);
    co_return Status{};
  }
  crash_point("fm.prepare.after-intent-recorded");
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
  if (!it->second.activate) {  // FullPassthrough: FM was never asked
    held_.erase(it);
    co_return Status{};
  }
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
  if (!plan.partitions.empty()) held_[uid] = std::move(plan);
}

asio::awaitable<Status> FabricPartitions::reconcile() {
  if (held_.empty() || !session_.manager) co_return Status{};
  std::set<unsigned> wanted;
  for (const auto& [uid, plan] : held_)
    if (plan.activate) wanted.insert(plan.partitions.begin(), plan.partitions.end());
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
    for (unsigned id : plan.activate ? plan.partitions : std::vector<unsigned>{}) {
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
