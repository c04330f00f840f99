#include "agent/drivers/domain_pipeline.hpp"

#include "agent/claims/claim/claim_source.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/naming.hpp"
#include "k8s/api_server.hpp"
#include "k8s/claim_lookup.hpp"

namespace nvdra::drivers {

using claims::CheckpointedClaim;
using claims::ClaimState;
using claims::ClaimUpdate;

namespace {

Error naming(Error e, const kubelet::ClaimRef& claim) {
  if (e.claim.empty()) e.claim = claim.describe();
  return e;
}

void reach(void (*point)()) {
  if (point) point();
}

}  // namespace

boost::asio::awaitable<Result<k8s::ClaimAllocation>> read_domain_allocation(k8s::ApiServer* api,
                                                                            const kubelet::ClaimRef& claim) {
  if (!api)
    co_return naming(make_error(ErrorCode::kUnavailable, "no Kubernetes API server is configured (--kubeconfig or "
                                                         "in-cluster): cannot read the claim's allocation"),
                     claim);
  k8s::ClaimRef ref{claim.namespace_name, claim.name, claim.uid};
  auto allocation = co_await k8s::lookup_claim(*api, ref, std::string(claims::kComputeDomainDriverName));
  if (!allocation) co_return naming(allocation.error(), claim);
  co_return std::move(*allocation);
}

CheckpointedClaim started_entry(const kubelet::ClaimRef& claim, const boost::json::value& status) {
  return CheckpointedClaim{ClaimState::kPrepareStarted, status, {}, claim.name, claim.namespace_name, {}};
}

// The claim's CDI spec (upstream writes one only when some device has edits).
class DomainClaimBook::SpecStep final : public DomainStep {
 public:
  explicit SpecStep(DomainClaimBook& book) : book_(book) {}
  std::string_view name() const override { return "claim-spec"; }
  Status plan(DomainPrepare&) const override { return {}; }
  boost::asio::awaitable<Status> apply(DomainPrepare& c) override {
    if (c.edits.empty()) co_return Status{};
    auto built = co_await book_.pool_.run([&c, &book = book_]() -> Result<cdi::BuiltSpec> {
      auto spec = cdi::build_claim_spec(cdi::kComputeDomainVendor, c.claim.uid, std::move(c.edits));
      if (!spec) return spec.error();
      if (auto st = book.specs_.write(*spec); !st) return st.error();
      reach(book.points_.after_spec_write);
      return spec;
    });
    if (!built) co_return built.error();
    c.ids.insert(c.ids.end(), built->device_ids.begin(), built->device_ids.end());
    co_return Status{};
  }
  boost::asio::awaitable<Status> undo(DomainPrepare& c) override {
    co_return co_await book_.pool_.run(
        [&c, &book = book_] { return book.specs_.remove_claim(cdi::kComputeDomainVendor, c.claim.uid); });
  }
  boost::asio::awaitable<Status> recover(DomainPrepare&) override { co_return Status{}; }

 private:
  DomainClaimBook& book_;
};

DomainClaimBook::DomainClaimBook(runtime::WorkerPool& pool, claims::CheckpointCommitter& committer,
                                 cdi::SpecStore& specs, DomainCrashPoints points)
    : pool_(pool), committer_(committer), specs_(specs), points_(points),
      spec_step_(std::make_unique<SpecStep>(*this)) {}

DomainClaimBook::~DomainClaimBook() = default;

DomainStep& DomainClaimBook::spec_step() { return *spec_step_; }

claims::steps::PipelineHooks<DomainPrepare> DomainClaimBook::hooks() {
  claims::steps::PipelineHooks<DomainPrepare> h;
  // The domain steps keep the default needs_record (true): a channel claim's entry names its domain,
  // which a driver-managed node labels before the daemon is awaited; start-up finds that label by it.
  h.started = [this](DomainPrepare& c, bool durable) -> boost::asio::awaitable<Status> {
    c.entry.state = ClaimState::kPrepareStarted;
    if (!durable) committer_.stage(c.claim.uid, c.entry);
    else if (auto st = co_await committer_.commit_one(c.claim.uid, c.entry); !st) co_return st;
    reach(points_.after_started);
    co_return Status{};
  };
  h.completed = [this](DomainPrepare& c) -> boost::asio::awaitable<Status> {
    c.entry.state = ClaimState::kPrepareCompleted;
    c.entry.prepared_devices = c.encode(c.ids);
    if (auto st = co_await committer_.commit_one(c.claim.uid, c.entry); !st) co_return st;
    reach(points_.after_completed);  // durable, kubelet not yet answered
    co_return Status{};
  };
  return h;
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> DomainClaimBook::run(
    const DomainSteps& steps, DomainPrepare& c, const claims::steps::PipelineHooks<DomainPrepare>& hooks,
    kubelet::PreparedDevice device) {
  if (auto st = co_await claims::steps::run_pipeline(steps, c, hooks); !st) co_return naming(st.error(), c.claim);
  device.cdi_device_ids = c.ids;
  co_return std::vector<kubelet::PreparedDevice>{std::move(device)};
}

boost::asio::awaitable<Status> DomainClaimBook::forget(const kubelet::ClaimRef& claim) {
  Status st = co_await pool_.run([&] { return specs_.remove_claim(cdi::kComputeDomainVendor, claim.uid); });
  if (!st) co_return naming(st.error(), claim);
  reach(points_.after_spec_remove);
  if (committer_.current().claims.count(claim.uid) == 0) co_return Status{};
  if (auto c = co_await committer_.commit_one(claim.uid, std::nullopt); !c)
    co_return naming(c.error(), claim);
  reach(points_.after_erase);  // durable, kubelet not yet answered
  co_return Status{};
}

boost::asio::awaitable<std::vector<Error>> DomainClaimBook::recover(
    const std::function<boost::asio::awaitable<Status>(kubelet::ClaimRef)>& forget) {
  std::vector<kubelet::ClaimRef> unfinished;
  for (const auto& [uid, entry] : committer_.current().claims)
    if (entry.state != ClaimState::kPrepareCompleted) unfinished.push_back({entry.ns, entry.name, uid});
  std::vector<Error> errors;
  for (const auto& claim : unfinished)
    if (auto st = co_await forget(claim); !st) errors.push_back(st.error());
  co_return errors;
}

}  // namespace nvdra::drivers
