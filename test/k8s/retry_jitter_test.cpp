// Jittered retries (issue #22 item 7): Backoff's equal jitter (agent/base/backoff.hpp) and the
// reflector's pause after a dropped watch, which spreads agents cut off together over
// [base/2, base] instead of bringing them back in the same instant.
#include "agent/base/backoff.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "k8s/reflector.hpp"

namespace nvdra {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, EachDelayIsWithinHalfTheCeilingAndTheCeiling) {
  Backoff b(milliseconds(100), milliseconds(30000));
  long long ceiling = 100;
  for (int attempt = 0; attempt < 12; ++attempt) {
    const auto d = b.next().count();
    EXPECT_GE(d, ceiling / 2) << "attempt " << attempt;
    EXPECT_LE(d, ceiling) << "attempt " << attempt;
    EXPECT_EQ(b.attempts(), attempt + 1);
    ceiling = std::min(ceiling * 2, 30000LL);
  }
}

TEST(Backoff, GrowsByDoublingUntilTheCap) {
  // Equal jitter keeps half of each ceiling: attempt k waits at least base·2^k / 2.
  Backoff b(milliseconds(10), milliseconds(5000));
  std::vector<long long> delays;
  for (int i = 0; i < 10; ++i) delays.push_back(b.next().count());
  EXPECT_LE(delays[0], 10);
  EXPECT_GE(delays[5], 160);   // ceiling 320
  EXPECT_GE(delays[8], 1280);  // ceiling 2560
  EXPECT_GT(delays[8], delays[0] * 100);
}

TEST(Backoff, CapHoldsHoweverManyAttempts) {
  Backoff b(milliseconds(200), milliseconds(30000));
  for (int i = 0; i < 200; ++i) {  // past the 2^20 shift limit: no overflow, still capped
    const auto d = b.next().count();
    if (i >= 8) {  // 200·2^8 > 30000
      EXPECT_GE(d, 15000) << "attempt " << i;
      EXPECT_LE(d, 30000) << "attempt " << i;
    }
  }
}

TEST(Backoff, ResetStartsOverFromTheBase) {
  Backoff b(milliseconds(100), milliseconds(30000));
  for (int i = 0; i < 9; ++i) b.next();
  EXPECT_GE(b.next().count(), 12800);
  b.reset();
  EXPECT_EQ(b.attempts(), 0);
  const auto d = b.next().count();
  EXPECT_GE(d, 50);
  EXPECT_LE(d, 100);
}

TEST(Backoff, DrawsSpreadOverTheWholeRange) {
  // Peers must not retry together: over many draws of one attempt the delays take many values and
  // reach both ends of [ceiling/2, ceiling]; two Backoffs (two agents) do not draw the same sequence.
  Backoff a(milliseconds(1000), milliseconds(30000)), b(milliseconds(1000), milliseconds(30000));
  std::set<long long> seen;
  std::vector<long long> seq_a, seq_b;
  long long lo = 1000, hi = 0;
  for (int i = 0; i < 2000; ++i) {
    a.reset(), b.reset();
    const auto d = a.next().count();
    seen.insert(d);
    lo = std::min<long long>(lo, d), hi = std::max<long long>(hi, d);
    if (i < 20) seq_a.push_back(d), seq_b.push_back(b.next().count());
  }
  EXPECT_GT(seen.size(), 300u);
  EXPECT_LT(lo, 550);
  EXPECT_GT(hi, 950);
  EXPECT_NE(seq_a, seq_b);
}

// An API server whose every watch sends one event (or none) and then drops the connection.
class DroppingApi final : public k8s::ApiServer {
 public:
  using Api = boost::asio::awaitable<k8s::ApiResult<std::string>>;
  bool send_event = true;
  std::function<void(int)> on_watch;  // called with the watch count before each watch answers
  int watches = 0;

  Api get(k8s::ResourceType, k8s::ObjectKey) override { co_return std::string("{}"); }
  boost::asio::awaitable<k8s::ApiResult<k8s::ListResult>> list(k8s::ResourceType, std::string,
                                                                 k8s::ListOptions) override {
    k8s::ListResult r;
    r.resource_version = "1";
    co_return r;
  }
  boost::asio::awaitable<k8s::ApiResult<std::unique_ptr<k8s::WatchStream>>> watch(k8s::ResourceType, std::string,
                                                                                    k8s::WatchOptions) override {
    on_watch(++watches);
    co_return std::unique_ptr<k8s::WatchStream>(std::make_unique<Stream>(send_event));
  }
  Api create(k8s::ResourceType, std::string, std::string) override { co_return std::string("{}"); }
  Api update(k8s::ResourceType, k8s::ObjectKey, std::string) override { co_return std::string("{}"); }
  Api patch(k8s::ResourceType, k8s::ObjectKey, std::string) override { co_return std::string("{}"); }
  boost::asio::awaitable<k8s::ApiStatus> remove(k8s::ResourceType, k8s::ObjectKey, k8s::Preconditions) override {
    co_return k8s::Ok{};
  }
  boost::asio::awaitable<k8s::ApiResult<k8s::ServerVersion>> version() override {
    co_return k8s::ServerVersion{1, 35, "v1.35.0"};
  }

 private:
  class Stream final : public k8s::WatchStream {
   public:
    explicit Stream(bool event) : left_(event ? 1 : 0) {}
    boost::asio::awaitable<k8s::ApiResult<std::optional<k8s::WatchEvent>>> next() override {
      if (left_-- > 0) {
        k8s::WatchEvent e;
        e.type = k8s::WatchEventType::kAdded;
        e.name = "slice-" + std::to_string(left_ + 10);
        e.object = R"({"metadata":{"name":"s"}})";
        e.resource_version = "2";
        co_return std::optional<k8s::WatchEvent>(std::move(e));
      }
      co_return k8s::make_local_error(k8s::kReasonConnection, "connection reset by peer");
    }

   private:
    int left_;
  };
};

// Runs a reflector against `api` until its `watches`-th watch, noting the pause before each resume.
std::vector<long long> pauses_after_drops(DroppingApi& api, milliseconds base, int watches,
                                          std::optional<milliseconds> spread = std::nullopt) {
  std::optional<k8s::Reflector> reflector;  // outlives the io_context, which destroys its suspended run()
  boost::asio::io_context io;
  k8s::ReflectorOptions o;
  o.backoff_base = base;
  o.backoff_cap = milliseconds(30000);
  if (spread) o.reconnect_pacing = std::make_shared<ReconnectPacing>(*spread, milliseconds(30000), 5);
  auto shared = std::shared_ptr<DroppingApi>(&api, [](DroppingApi*) {});
  reflector.emplace(io.get_executor(), shared, k8s::kResourceSlicesV1, o, nullptr);
  std::vector<long long> pauses;
  api.on_watch = [&](int n) {
    if (n > 1) pauses.push_back(reflector->stats().last_drop_pause.count());
    if (n == watches) io.stop();
  };
  boost::asio::co_spawn(io, reflector->run(), boost::asio::detached);
  boost::asio::steady_timer deadline(io, std::chrono::seconds(60));
  deadline.async_wait([&](auto) { io.stop(); });
  io.run();
  EXPECT_EQ(api.watches, watches) << "the reflector stopped resuming its watch";
  EXPECT_GE(reflector->stats().drops, static_cast<uint64_t>(watches - 1));  // the last watch may drop too
  return pauses;
}

TEST(ReflectorJitter, PauseAfterADropIsDrawnFromHalfTheBaseToTheBase) {
  // The slice publisher's reflector (backoff base 500 ms): a watch that delivered events and then
  // dropped resumes after [250, 500] ms, every time (a healthy stream resets the backoff).
  DroppingApi api;
  const auto pauses = pauses_after_drops(api, milliseconds(500), 7);
  ASSERT_EQ(pauses.size(), 6u);
  for (auto p : pauses) {
    EXPECT_GE(p, 250);
    EXPECT_LE(p, 500);
  }
  EXPECT_GT(std::set<long long>(pauses.begin(), pauses.end()).size(), 1u) << "the pause is jittered";
}

TEST(ReflectorJitter, WithAReconnectSpreadTheFirstPauseIsDrawnFromTheWholeWindow) {
  // Every drop after a healthy stream starts a reconnect: a pause from [0, spread), not [base/2, base].
  DroppingApi api;
  const auto pauses = pauses_after_drops(api, milliseconds(5), 9, milliseconds(300));
  ASSERT_EQ(pauses.size(), 8u);
  for (auto p : pauses) {
    EXPECT_GE(p, 0);
    EXPECT_LT(p, 300);
  }
  EXPECT_GT(*std::max_element(pauses.begin(), pauses.end()), 5) << "the base no longer bounds the pause";
}

TEST(ReflectorJitter, WithAReconnectSpreadFailedReconnectsBackOffFromTheSpread) {
  // Very short watches while reconnecting are failed attempts: half a ceiling that starts at the
  // spread and doubles, plus [0, spread).
  DroppingApi api;
  api.send_event = false;
  const auto pauses = pauses_after_drops(api, milliseconds(5), 4, milliseconds(100));
  ASSERT_EQ(pauses.size(), 3u);
  EXPECT_LT(pauses[0], 100);  // the first drop: lost()
  EXPECT_GE(pauses[1], 50);
  EXPECT_LT(pauses[1], 150);
  EXPECT_GE(pauses[2], 100);
  EXPECT_LT(pauses[2], 200);
}

TEST(ReflectorJitter, AVeryShortWatchGrowsThePause) {
  // A watch that drops at once without an event is a failure (client-go's very short watch): the
  // ceiling doubles per drop, the pause staying within [ceiling/2, ceiling].
  DroppingApi api;
  api.send_event = false;
  const auto pauses = pauses_after_drops(api, milliseconds(20), 6);
  ASSERT_EQ(pauses.size(), 5u);
  long long ceiling = 20;
  for (auto p : pauses) {
    EXPECT_GE(p, ceiling / 2);
    EXPECT_LE(p, ceiling);
    ceiling *= 2;
  }
}

}  // namespace
}  // namespace nvdra
