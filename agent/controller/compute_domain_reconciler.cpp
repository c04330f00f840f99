#include "agent/controller/compute_domain_reconciler.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/backoff.hpp"
#include "agent/base/log.hpp"
#include "k8s/change_signal.hpp"
#include "k8s/reflector.hpp"

namespace nvdra::controller {

namespace asio = boost::asio;
using asio::awaitable;

ComputeDomainReconciler::ComputeDomainReconciler(asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api,
                                                 ReconcilerOptions options)
    : ex_(std::move(ex)), api_(std::move(api)), options_(options) {}

namespace {
constexpr std::string_view kStaleField = "metadata.resourceVersion";
}  // namespace

Error ComputeDomainReconciler::api_error(const ComputeDomain& cd, const std::string& what,
                                         const k8s::ApiError& err) const {
  // A 409 means our copy was stale (an event older than our own last write): marked by the field
  // that conflicted, and retried quietly on the next pass; everything else is reported.
  return Error{ErrorCode::kUnavailable, cd.describe() + ": " + what + ": " + err.describe(), {},
               err.conflict() ? std::string(kStaleField) : std::string()};
}

awaitable<void> ComputeDomainReconciler::run() {
  auto log = nvdra::logger("controller");
  k8s::ChangeSignal signal(ex_);
  k8s::ReflectorOptions ro;
  ro.watch_timeout = options_.watch_timeout;
  ro.backoff_base = options_.backoff_base;
  ro.backoff_cap = options_.backoff_cap;
  k8s::Reflector reflector(ex_, api_, k8s::kComputeDomainsV1beta1, ro, &signal);
  done_.clear();  // a new term: look at every CD again
  auto loop = [&]() -> awaitable<void> {
    Backoff backoff(options_.backoff_base, options_.backoff_cap);
    auto last_resync = std::chrono::steady_clock::now();
    for (;;) {
      if (std::chrono::steady_clock::now() - last_resync >= options_.resync) {
        done_.clear();  // look at every CD again, in case someone removed what we made
        last_resync = std::chrono::steady_clock::now();
      }
      if (!reflector.synced()) {
        co_await signal.wait();
        continue;
      }
      ++stats_.passes;
      bool failed = false;
      // A copy: reconcile() awaits, and the watch may change the cache meanwhile.
      const auto objects = reflector.objects();
      for (const auto& [key, entry] : objects) {
        auto status = co_await reconcile(entry.json);
        if (!status) {
          failed = true;
          if (status.error().field == kStaleField) {
            ++stats_.conflicts;
            log->debug("{}; retrying with the newer object", status.error().describe());
            continue;
          }
          ++stats_.failures;
          log->warn("{}; retrying", status.error().describe());
          if (on_error_) on_error_(status.error().describe());
        }
      }
      // Forget what no longer exists (deleted by someone else, or gone before we saw it deleting).
      for (auto it = tracked_.begin(); it != tracked_.end();) {
        bool present = false;
        for (const auto& [key, entry] : objects) present = present || key == it->second.key;
        it = present ? std::next(it) : tracked_.erase(it);
      }
      if (failed) {
        co_await signal.wait(backoff.next());
      } else {
        backoff.reset();
        co_await signal.wait(options_.resync);
      }
    }
  };
  using namespace asio::experimental::awaitable_operators;
  co_await (reflector.run() || loop());
}

awaitable<Status> ComputeDomainReconciler::reconcile(std::string cd_json) {
  auto cd = decode_compute_domain(cd_json);
  if (!cd) co_return Error{ErrorCode::kInvalidArgument, "unreadable ComputeDomain: " + cd.error().describe()};
  if (auto it = done_.find(cd->uid); it != done_.end() && it->second == cd->resource_version) co_return Status{};
  if (cd->deleting) co_return co_await remove(std::move(*cd), std::move(cd_json));
  co_return co_await add(std::move(*cd), std::move(cd_json));
}

awaitable<Status> ComputeDomainReconciler::set_cd_finalizer(const ComputeDomain& cd, const std::string& json,
                                                            bool present, std::string* stored) {
  auto body = with_finalizer(json, kComputeDomainFinalizer, present);
  if (!body) co_return body.error();
  k8s::ObjectKey key;  // named locals: GCC 12 double-destroys braced temporaries passed to coroutines
  key.ns = cd.ns;
  key.name = cd.name;
  auto res = co_await api_->update(k8s::kComputeDomainsV1beta1, key, std::move(*body));
  if (!res) {
    if (!present && res.error().not_found()) co_return Status{};  // already gone
    co_return api_error(cd, present ? "adding its finalizer" : "removing its finalizer", res.error());
  }
  ++stats_.finalizer_writes;
  if (stored != nullptr) *stored = std::move(*res);
  co_return Status{};
}

awaitable<Status> ComputeDomainReconciler::add(ComputeDomain cd, std::string json) {
  auto log = nvdra::logger("controller");
  if (cd.rct_name.empty()) {
    co_return Error{ErrorCode::kInvalidArgument, cd.describe() + ": spec.channel.resourceClaimTemplate.name is empty"};
  }
  tracked_[cd.uid] = Tracked{cd.ns + "/" + cd.name, cd.status};
  if (!cd.has_finalizer()) {
    std::string stored;
    auto added = co_await set_cd_finalizer(cd, json, true, &stored);
    if (!added) co_return added;
    json = std::move(stored);
  }
  auto rct = co_await ensure_rct(cd);
  if (!rct) co_return rct;
  auto current = decode_compute_domain(json);
  if (!current) co_return current.error();
  if (current->status != "Ready") {
    // status.status=Ready means only: admitted, and the workload RCT exists (seed, status semantics).
    auto body = with_status(json, "Ready");
    if (!body) co_return body.error();
    k8s::ObjectKey key;
    key.ns = cd.ns;
    key.name = cd.name;
    auto res = co_await api_->update(k8s::kComputeDomainsStatusV1beta1, key, std::move(*body));
    if (!res) co_return api_error(cd, "setting status Ready", res.error());
    ++stats_.status_writes;
    log->info("{} Ready; workload ResourceClaimTemplate {}/{}", cd.describe(), cd.ns, cd.rct_name);
    if (auto fresh = decode_compute_domain(*res)) current = std::move(fresh);
  }
  tracked_[cd.uid].status = "Ready";
  done_[cd.uid] = current->resource_version;
  co_return Status{};
}

awaitable<Status> ComputeDomainReconciler::ensure_rct(const ComputeDomain& cd) {
  k8s::ObjectKey key;
  key.ns = cd.ns;
  key.name = cd.rct_name;
  auto got = co_await api_->get(k8s::kResourceClaimTemplatesV1, key);
  if (got) {
    auto rct = decode_claim_template(*got);
    if (!rct) co_return rct.error();
    if (rct->owner != cd.uid) {
      co_return Error{ErrorCode::kFailedPrecondition,
                      cd.describe() + ": ResourceClaimTemplate " + cd.ns + "/" + cd.rct_name +
                          " already exists and does not belong to it (label " + kComputeDomainLabel + "=" +
                          (rct->owner.empty() ? std::string("<none>") : rct->owner) + "); rename one of them"};
    }
    if (rct->deleting) {
      co_return Error{ErrorCode::kUnavailable, cd.describe() + ": ResourceClaimTemplate " + cd.ns + "/" +
                                                   cd.rct_name + " is still being deleted; retrying"};
    }
    co_return Status{};
  }
  if (!got.error().not_found()) co_return api_error(cd, "reading its ResourceClaimTemplate", got.error());
  auto created = co_await api_->create(k8s::kResourceClaimTemplatesV1, cd.ns, render_workload_rct(cd));
  if (!created) co_return api_error(cd, "creating ResourceClaimTemplate " + cd.rct_name, created.error());
  ++stats_.rct_creates;
  nvdra::logger("controller")->info("{}: created ResourceClaimTemplate {}/{}", cd.describe(), cd.ns, cd.rct_name);
  co_return Status{};
}

awaitable<Status> ComputeDomainReconciler::delete_rct(const ComputeDomain& cd) {
  k8s::ObjectKey key;
  key.ns = cd.ns;
  key.name = cd.rct_name;
  auto got = co_await api_->get(k8s::kResourceClaimTemplatesV1, key);
  if (!got) co_return got.error().not_found() ? Status{} : Status{api_error(cd, "reading its RCT", got.error())};
  auto rct = decode_claim_template(*got);
  if (!rct) co_return rct.error();
  if (rct->owner != cd.uid) co_return Status{};  // not ours: never touched
  // 1. delete (with our finalizer on it, the server only marks it deleting).
  if (!rct->deleting) {
    k8s::Preconditions pre;
    pre.uid = rct->uid;
    auto removed = co_await api_->remove(k8s::kResourceClaimTemplatesV1, key, pre);
    if (!removed && !removed.error().not_found()) co_return api_error(cd, "deleting its RCT", removed.error());
    ++stats_.rct_deletes;
    got = co_await api_->get(k8s::kResourceClaimTemplatesV1, key);
    if (!got) co_return got.error().not_found() ? Status{} : Status{api_error(cd, "reading its RCT", got.error())};
  }
  // 2. remove our finalizer from it.
  auto body = with_finalizer(*got, kComputeDomainFinalizer, false);
  if (!body) co_return body.error();
  auto updated = co_await api_->update(k8s::kResourceClaimTemplatesV1, key, std::move(*body));
  if (!updated && !updated.error().not_found()) co_return api_error(cd, "removing its RCT's finalizer", updated.error());
  if (updated) ++stats_.finalizer_writes;
  // 3. it must be gone now (another finalizer would keep it: then retry later).
  auto check = co_await api_->get(k8s::kResourceClaimTemplatesV1, key);
  if (check) {
    co_return Error{ErrorCode::kUnavailable,
                    cd.describe() + ": ResourceClaimTemplate " + cd.ns + "/" + cd.rct_name + " still exists after deletion"};
  }
  if (!check.error().not_found()) co_return api_error(cd, "checking its RCT is gone", check.error());
  nvdra::logger("controller")->info("{}: deleted ResourceClaimTemplate {}/{}", cd.describe(), cd.ns, cd.rct_name);
  co_return Status{};
}

awaitable<Status> ComputeDomainReconciler::remove(ComputeDomain cd, std::string json) {
  if (cd.has_finalizer()) {
    if (!cd.rct_name.empty()) {
      auto rct = co_await delete_rct(cd);
      if (!rct) co_return rct;
    }
    auto released = co_await set_cd_finalizer(cd, json, false, nullptr);
    if (!released) co_return released;
    nvdra::logger("controller")->info("{} deleted: its finalizer removed", cd.describe());
  }
  tracked_.erase(cd.uid);  // forget its metrics
  done_.erase(cd.uid);
  co_return Status{};
}

}  // namespace nvdra::controller
