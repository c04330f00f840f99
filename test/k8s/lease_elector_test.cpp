// LeaseElector against the API-server double: acquire, renew, conflict, take-over after expiry,
// release on shutdown, losing the lease to a peer. Short lease timings keep the tests quick; every
// wait is for an event under the fixture's deadline, nothing asserts on durations.
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "k8s/lease_codec.hpp"
#include "k8s/lease_elector.hpp"
#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::k8s::testing {
namespace {

using namespace asio::experimental::awaitable_operators;

constexpr const char* kNs = "nvdra";
constexpr const char* kLease = "compute-domain-controller";

class LeaseElectorTest : public DoubleTest {
 protected:
  std::unique_ptr<LeaseElector> make_elector(std::shared_ptr<ApiServer> api, std::string identity,
                                             std::chrono::seconds duration = std::chrono::seconds(2)) {
    LeaseElectorOptions o;
    o.ns = kNs;
    o.name = kLease;
    o.identity = std::move(identity);
    o.lease_duration = duration;
    o.renew_deadline = std::chrono::milliseconds(1500);
    o.retry_period = std::chrono::milliseconds(100);
    return std::make_unique<LeaseElector>(io_.get_executor(), std::move(api), o);
  }

  awaitable<StoredLease> stored_lease(ApiServer& api) {
    ObjectKey key;
    key.ns = kNs;
    key.name = kLease;
    auto got = co_await api.get(kLeasesV1, key);
    if (!got) throw std::runtime_error(got.error().describe());
    co_return *decode_lease(*got);
  }

  // Waits until the stored Lease satisfies `pred`, re-reading it after each of the elector's rounds.
  awaitable<StoredLease> wait_lease(ApiServer& api, std::function<bool(const LeaseRecord&)> pred) {
    for (;;) {
      auto lease = co_await stored_lease(api);
      if (pred(lease.record)) co_return lease;
      asio::steady_timer t(io_, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::use_awaitable);
    }
  }

  // Runs an elector until `body` returns; then the elector is cancelled (and releases).
  awaitable<void> with_elector(LeaseElector& e, std::function<awaitable<void>()> body) {
    co_await (e.run() || body());
  }
};

TEST_F(LeaseElectorTest, AcquiresByCreatingTheLeaseThenRenewsIt) {
  auto api = make_api();
  auto a = make_elector(api, "node-a");
  run([&]() -> awaitable<void> {
    co_await with_elector(*a, [&]() -> awaitable<void> {
      co_await a->wait_leader();
      auto first = co_await stored_lease(*api);
      EXPECT_EQ(first.record.holder, "node-a");
      EXPECT_EQ(first.record.lease_duration_seconds, 2);
      EXPECT_EQ(first.record.lease_transitions, 0);
      EXPECT_FALSE(first.record.acquire_time.empty());
      auto renewed = co_await wait_lease(*api, [&](const LeaseRecord& r) { return r.renew_time != first.record.renew_time; });
      EXPECT_EQ(renewed.record.holder, "node-a");
      EXPECT_EQ(renewed.record.acquire_time, first.record.acquire_time);
      EXPECT_EQ(renewed.record.lease_transitions, 0);
      EXPECT_TRUE(a->leader());
      // The stored renewal can be read before the elector has its PUT's answer: wait for that too.
      while (a->stats().renewals == 0) {
        asio::steady_timer t(io_, std::chrono::milliseconds(10));
        co_await t.async_wait(asio::use_awaitable);
      }
    });
  });
  EXPECT_GE(a->stats().renewals, 1u);
}

TEST_F(LeaseElectorTest, OnlyOneOfTwoLeadsAndTheOtherTakesOverWhenTheLeaderReleases) {
  auto api = make_api();
  auto a = make_elector(api, "node-a");
  auto b = make_elector(api, "node-b");
  run([&]() -> awaitable<void> {
    co_await with_elector(*b, [&]() -> awaitable<void> {
      co_await with_elector(*a, [&]() -> awaitable<void> {
        co_await (a->wait_leader() || b->wait_leader());
        LeaseElector& leader = a->leader() ? *a : *b;
        LeaseElector& follower = a->leader() ? *b : *a;
        // Several renewals later the follower has still not led.
        const auto target = leader.stats().renewals + 5;
        while (leader.stats().renewals < target) {
          asio::steady_timer t(io_, std::chrono::milliseconds(50));
          co_await t.async_wait(asio::use_awaitable);
        }
        EXPECT_FALSE(follower.leader());
        EXPECT_EQ(follower.stats().acquisitions, 0u);
        EXPECT_EQ(follower.observed_holder(), leader.options().identity);
      });
      // `a` was cancelled: if it led, it released; either way `b` leads now.
      co_await b->wait_leader();
      auto lease = co_await stored_lease(*api);
      EXPECT_EQ(lease.record.holder, "node-b");
    });
  });
  EXPECT_FALSE(a->leader());
}

TEST_F(LeaseElectorTest, ReleaseOnShutdownClearsTheHolder) {
  auto api = make_api();
  auto a = make_elector(api, "node-a", std::chrono::seconds(30));
  run([&]() -> awaitable<void> {
    co_await with_elector(*a, [&]() -> awaitable<void> { co_await a->wait_leader(); });
    auto lease = co_await stored_lease(*api);
    EXPECT_EQ(lease.record.holder, "");
    EXPECT_EQ(lease.record.lease_duration_seconds, 1);
    // A peer takes a released lease at once, long before the 30 s duration has passed.
    auto b = make_elector(api, "node-b", std::chrono::seconds(30));
    co_await with_elector(*b, [&]() -> awaitable<void> { co_await b->wait_leader(); });
    EXPECT_EQ(b->stats().acquisitions, 1u);
  });
  EXPECT_EQ(a->stats().releases, 1u);
  EXPECT_FALSE(a->leader());
}

TEST_F(LeaseElectorTest, TakesOverAnExpiredLeaseAndCountsTheTransition) {
  auto api = make_api();
  run([&]() -> awaitable<void> {
    // A holder that died without releasing: it never renews again.
    LeaseRecord dead;
    dead.holder = "node-dead";
    dead.lease_duration_seconds = 1;
    dead.acquire_time = dead.renew_time = micro_time(std::chrono::system_clock::now());
    dead.lease_transitions = 3;
    auto created = co_await api->create(kLeasesV1, kNs, encode_lease(kNs, kLease, "", dead));
    CO_ASSERT_TRUE(created.ok());
    auto b = make_elector(api, "node-b");
    co_await with_elector(*b, [&]() -> awaitable<void> {
      co_await b->wait_leader();
      auto lease = co_await stored_lease(*api);
      EXPECT_EQ(lease.record.holder, "node-b");
      EXPECT_EQ(lease.record.lease_transitions, 4);
      EXPECT_NE(lease.record.acquire_time, dead.acquire_time);
    });
  });
}

TEST_F(LeaseElectorTest, AConflictingWriteIsRetriedOnFreshState) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  auto a = make_elector(api, "node-a");
  run([&]() -> awaitable<void> {
    co_await with_elector(*a, [&]() -> awaitable<void> { co_await a->wait_leader(); });
    // The next two writes of the lease lose a race.
    boost::json::object fault{{"method", "PUT"}, {"resource", "leases"}, {"status", 409}, {"count", 2}};
    co_await admin.post("/admin/faults", fault);
    auto b = make_elector(api, "node-b");
    co_await with_elector(*b, [&]() -> awaitable<void> { co_await b->wait_leader(); });
    EXPECT_GE(b->stats().conflicts, 2u);
    EXPECT_EQ(b->stats().failures, 0u);
  });
}

TEST_F(LeaseElectorTest, LosesLeadershipWhenAPeerHoldsTheLease) {
  auto api = make_api();
  auto a = make_elector(api, "node-a", std::chrono::seconds(30));
  int changes = 0;
  a->on_change([&](bool) { ++changes; });
  run([&]() -> awaitable<void> {
    co_await with_elector(*a, [&]() -> awaitable<void> {
      co_await a->wait_leader();
      // An operator (or a peer with a skewed view) hands the lease to someone else.
      auto lease = co_await stored_lease(*api);
      LeaseRecord other = lease.record;
      other.holder = "node-z";
      other.renew_time = micro_time(std::chrono::system_clock::now());
      ObjectKey key;
      key.ns = kNs;
      key.name = kLease;
      auto updated = co_await api->update(kLeasesV1, key, encode_lease(kNs, kLease, lease.meta.resource_version, other));
      CO_ASSERT_TRUE(updated.ok());
      co_await a->wait_lost();
      EXPECT_EQ(a->observed_holder(), "node-z");
    });
    // Not leader when cancelled: the peer's lease is left alone.
    auto lease = co_await stored_lease(*api);
    EXPECT_EQ(lease.record.holder, "node-z");
  });
  EXPECT_EQ(changes, 2);
  EXPECT_EQ(a->stats().releases, 0u);
}

}  // namespace
}  // namespace nvdra::k8s::testing
