// EventRecorder against the API-server double (real HTTPS, Events validated against the real
// events.k8s.io/v1 schema and the API server's Event rules): one Event per isomorphic occurrence
// set, series patches, the spam filter, the bounded queue, retries.
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include "k8s/event_recorder.hpp"
#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::k8s::testing {
namespace {

namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;

class EventRecorderTest : public DoubleTest {
 protected:
  EventRecorderOptions options() const {
    EventRecorderOptions o;
    o.reporting_controller = "gpu.nvidia.com";
    o.reporting_instance = "gpu.nvidia.com-node1";
    o.retry_interval = std::chrono::milliseconds(20);
    return o;
  }

  // Seeds ResourceClaim ns1/<name>; returns the uid the double gave it.
  awaitable<std::string> seed_claim(Admin& admin, std::string name) {
    json::object claim{{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaim"},
                       {"metadata", json::object{{"name", name}, {"namespace", "ns1"}}},
                       {"spec", json::object{}}};
    auto stored = co_await admin.post(std::string("/admin/objects"), std::move(claim));
    co_return std::string(stored.at("metadata").at("uid").as_string());
  }

  static EventInfo failed_prepare(std::string name, std::string uid, std::string note = "boom") {
    EventInfo e;
    e.regarding = ObjectRef{"resource.k8s.io/v1", "ResourceClaim", "ns1", std::move(name), std::move(uid), {}};
    e.reason = "FailedPrepare";
    e.action = "PrepareResourceClaim";
    e.note = std::move(note);
    return e;
  }

  awaitable<std::vector<json::value>> events(ApiServer& api, std::string ns = "ns1") {
    ListOptions lo;
    auto res = co_await api.list(kEventsV1, ns, lo);
    if (!res) throw std::runtime_error(res.error().describe());
    std::vector<json::value> out;
    for (const auto& item : res->items) out.push_back(json::parse(item));
    co_return out;
  }

  awaitable<void> expect_no_rejections(Admin& admin) {
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << json::serialize(rejections);
  }
};

TEST_F(EventRecorderTest, FailedPrepareLeavesOneValidEventRegardingTheClaim) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  EventRecorder recorder(io_.get_executor(), api, options());
  run([&]() -> awaitable<void> {
    const auto uid = co_await seed_claim(admin, "c1");
    recorder.record(failed_prepare("c1", uid, "claim ns1/c1: device gpu-0 is gone"));
    co_await recorder.flush();
    auto stored = co_await events(*api);
    CO_ASSERT_EQ(stored.size(), 1u);
    const auto& ev = stored[0].as_object();
    EXPECT_EQ(ev.at("reportingController").as_string(), "gpu.nvidia.com");
    EXPECT_EQ(ev.at("reportingInstance").as_string(), "gpu.nvidia.com-node1");
    EXPECT_EQ(ev.at("type").as_string(), "Warning");
    EXPECT_EQ(ev.at("reason").as_string(), "FailedPrepare");
    EXPECT_EQ(ev.at("action").as_string(), "PrepareResourceClaim");
    EXPECT_EQ(ev.at("note").as_string(), "claim ns1/c1: device gpu-0 is gone");
    EXPECT_FALSE(ev.contains("series"));
    const auto& regarding = ev.at("regarding").as_object();
    EXPECT_EQ(regarding.at("kind").as_string(), "ResourceClaim");
    EXPECT_EQ(regarding.at("uid").as_string(), uid);
    EXPECT_FALSE(regarding.at("resourceVersion").as_string().empty());  // completed from the claim
    EXPECT_TRUE(ev.at("metadata").at("name").as_string().starts_with("c1."));
    EXPECT_EQ(recorder.stats().created, 1u);
    co_await expect_no_rejections(admin);
  });
}

TEST_F(EventRecorderTest, RepeatsBecomeOneEventWithASeriesCount) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  EventRecorder recorder(io_.get_executor(), api, options());
  run([&]() -> awaitable<void> {
    const auto uid = co_await seed_claim(admin, "c1");
    recorder.record(failed_prepare("c1", uid));
    co_await recorder.flush();
    // A different note is the same event for client-go (the key is action, reason, controller, object).
    for (int i = 0; i < 4; ++i) recorder.record(failed_prepare("c1", uid, "boom " + std::to_string(i)));
    co_await recorder.flush();
    auto stored = co_await events(*api);
    CO_ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].at("series").at("count").as_int64(), 5);
    EXPECT_FALSE(stored[0].at("series").at("lastObservedTime").as_string().empty());
    EXPECT_EQ(stored[0].at("note").as_string(), "boom");
    EXPECT_EQ(recorder.stats().created, 1u);
    EXPECT_EQ(recorder.stats().patched, 1u);  // the four repeats went out in one patch
    co_await expect_no_rejections(admin);
  });
}

TEST_F(EventRecorderTest, AnOccurrenceAfterTheSeriesEndedStartsANewEvent) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  auto o = options();
  o.finish_after = std::chrono::steady_clock::duration::zero();  // every series ends at once (6 min by default)
  EventRecorder recorder(io_.get_executor(), api, o);
  run([&]() -> awaitable<void> {
    const auto uid = co_await seed_claim(admin, "c1");
    recorder.record(failed_prepare("c1", uid));
    co_await recorder.flush();
    recorder.record(failed_prepare("c1", uid));
    co_await recorder.flush();
    auto stored = co_await events(*api);
    EXPECT_EQ(stored.size(), 2u);
    for (const auto& ev : stored) EXPECT_FALSE(ev.as_object().contains("series"));
    EXPECT_EQ(recorder.stats().created, 2u);
    EXPECT_EQ(recorder.stats().patched, 0u);
  });
}

TEST_F(EventRecorderTest, DistinctReasonsAndObjectsAreDistinctEvents) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  EventRecorder recorder(io_.get_executor(), api, options());
  run([&]() -> awaitable<void> {
    const auto a = co_await seed_claim(admin, "a");
    const auto b = co_await seed_claim(admin, "b");
    recorder.record(failed_prepare("a", a));
    recorder.record(failed_prepare("b", b));
    auto other = failed_prepare("a", a);
    other.reason = "FailedUnprepare";
    other.action = "UnprepareResourceClaim";
    recorder.record(other);
    co_await recorder.flush();
    EXPECT_EQ((co_await events(*api)).size(), 3u);
    co_await expect_no_rejections(admin);
  });
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetTheirEventsInDefault) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  EventRecorder recorder(io_.get_executor(), api, options());
  run([&]() -> awaitable<void> {
    EventInfo e;
    e.regarding = ObjectRef{"v1", "Node", "", "node1", "", ""};
    e.reason = "CheckpointUnreadable";
    e.action = "ReadCheckpoint";
    e.note = "checkpoint.json: not JSON";
    recorder.record(e);
    co_await recorder.flush();
    auto stored = co_await events(*api, "default");
    CO_ASSERT_EQ(stored.size(), 1u);
    EXPECT_FALSE(stored[0].at("regarding").at("uid").as_string().empty());  // the Node's, read from the API
    co_await expect_no_rejections(admin);
  });
}

TEST_F(EventRecorderTest, NoteIsCutToOneKibibyteOnACharacterBoundary) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  EventRecorder recorder(io_.get_executor(), api, options());
  run([&]() -> awaitable<void> {
    const auto uid = co_await seed_claim(admin, "c1");
    std::string note;
    for (int i = 0; i < 1000; ++i) note += "\xc3\xa9";  // "é", two bytes each
    recorder.record(failed_prepare("c1", uid, note));
    co_await recorder.flush();
    auto stored = co_await events(*api);
    CO_ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].at("note").as_string().size(), 1024u);
    co_await expect_no_rejections(admin);
  });
}

TEST_F(EventRecorderTest, SpamFilterDefersWritesForOneObjectBeyondItsBurst) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  auto o = options();
  o.spam_burst = 2;
  EventRecorder recorder(io_.get_executor(), api, o);
  run([&]() -> awaitable<void> {
    const auto uid = co_await seed_claim(admin, "c1");
    for (const char* reason : {"A", "B", "C", "D"}) {
      auto e = failed_prepare("c1", uid);
      e.reason = reason;
      recorder.record(e);
    }
    co_await recorder.flush();
    EXPECT_EQ((co_await events(*api)).size(), 2u);
    EXPECT_EQ(recorder.stats().created, 2u);
    EXPECT_EQ(recorder.stats().deferred, 2u);
  });
}

TEST_F(EventRecorderTest, FullQueueDropsAndCounts) {
  auto api = make_api();
  auto o = options();
  o.max_queued = 3;
  EventRecorder recorder(io_.get_executor(), api, o);
  for (int i = 0; i < 5; ++i) recorder.record(failed_prepare("c" + std::to_string(i), "u"));
  EXPECT_EQ(recorder.stats().recorded, 3u);
  EXPECT_EQ(recorder.stats().dropped, 2u);
}

TEST_F(EventRecorderTest, RunRetriesAServerErrorAndRecreatesAnExpiredSeriesEvent) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  EventRecorder recorder(io_.get_executor(), api, options());
  run([&]() -> awaitable<void> {
    const auto uid = co_await seed_claim(admin, "c1");
    json::object fault{{"method", "POST"}, {"resource", "events"}, {"status", 500}, {"count", 1}};
    co_await admin.post(std::string("/admin/faults"), fault);
    auto wait_for = [&](auto pred) -> awaitable<void> {
      asio::steady_timer tick(io_);
      while (!pred()) {
        tick.expires_after(std::chrono::milliseconds(5));
        co_await tick.async_wait(asio::use_awaitable);
      }
    };
    recorder.record(failed_prepare("c1", uid));
    co_await (recorder.run() || wait_for([&] { return recorder.stats().created == 1; }));
    // The Event expired (deleted): the next repeat's patch finds nothing and creates it again.
    json::object gone{{"apiVersion", "events.k8s.io/v1"}, {"resource", "events"}, {"fieldSelector", ""}};
    co_await admin.post(std::string("/admin/delete"), gone);
    recorder.record(failed_prepare("c1", uid));
    co_await (recorder.run() || wait_for([&] { return recorder.stats().created == 2; }));
    auto stored = co_await events(*api);
    CO_ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].at("series").at("count").as_int64(), 2);
    co_await expect_no_rejections(admin);
  });
}

// The double holds Events to the API server's rules, so the tests above would catch an invalid one.
TEST_F(EventRecorderTest, TheDoubleRejectsEventsTheApiServerWouldReject) {
  auto api = make_api();
  run([&]() -> awaitable<void> {
    const auto now = std::chrono::system_clock::now();
    auto id = make_identity(ObjectRef{"v1", "Node", "", "node1", "", ""}, "gpu.nvidia.com", "i", now);
    auto info = failed_prepare("x", "u");
    info.regarding = ObjectRef{"v1", "Node", "", "node1", "", ""};
    auto attempt = [&](json::object ev) -> awaitable<int> {
      auto res = co_await api->create(kEventsV1, "default", json::serialize(ev));
      co_return res ? 201 : res.error().http_status;
    };
    const auto valid = json::parse(encode_event(id, info, std::nullopt)).as_object();
    EXPECT_EQ(co_await attempt(valid), 201);
    auto one = json::parse(encode_event(make_identity(info.regarding, "gpu.nvidia.com", "i", now + std::chrono::seconds(1)),
                                        info, EventSeries{1, now})).as_object();
    EXPECT_EQ(co_await attempt(one), 422);  // a series of one
    auto long_note = valid;
    long_note["metadata"].as_object()["name"] = "node1.long";
    long_note["note"] = std::string(1025, 'x');
    EXPECT_EQ(co_await attempt(long_note), 422);
    auto no_action = valid;
    no_action["metadata"].as_object()["name"] = "node1.noaction";
    no_action.erase("action");
    EXPECT_EQ(co_await attempt(no_action), 422);
    auto unknown = valid;
    unknown["metadata"].as_object()["name"] = "node1.unknown";
    unknown["count"] = 3;  // core/v1 Event's field, not events.k8s.io/v1's
    EXPECT_EQ(co_await attempt(unknown), 400);
    auto wrong_ns = valid;
    wrong_ns["metadata"].as_object()["name"] = "node1.ns";
    auto res = co_await api->create(kEventsV1, "ns1", json::serialize(wrong_ns));
    EXPECT_FALSE(res);  // a cluster-scoped object's Event belongs in default
  });
}

}  // namespace
}  // namespace nvdra::k8s::testing
