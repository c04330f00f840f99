// ServerFacts: the drivers' publishers share one lookup of /version, the Node and the served
// fields; a caller that comes while it runs gets its answer, a cancelled lookup hands over to a
// waiter, an unreadable OpenAPI document means the version's fields.
#include "k8s/server_facts.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <exception>
#include <string>
#include <optional>
#include <vector>

namespace nvdra::k8s {
namespace {

namespace asio = boost::asio;
using Api = asio::awaitable<ApiResult<std::string>>;

// The /openapi/v3 index naming the document by the hash of its content.
std::string index_with(const std::string& hash) {
  return R"({"paths":{"apis/resource.k8s.io/v1":{"serverRelativeURL":"/openapi/v3/apis/resource.k8s.io/v1?hash=)" +
         hash + R"("}}})";
}
// A document that serves allowMultipleAllocations but no list attributes (a 1.36 server whose
// document says so: the answer must come from the document, not from the version).
constexpr const char* kDocument =
    R"({"components":{"schemas":{"io.k8s.api.resource.v1.DeviceAttribute":{"properties":{"int":{}}},)"
    R"("io.k8s.api.resource.v1.Device":{"properties":{"allowMultipleAllocations":{}}}}}})";

// Answers /version only when `gate` is released, so a second caller comes while the first waits.
class FactsApi final : public ApiServer {
 public:
  explicit FactsApi(asio::io_context& io) : gate(io, asio::steady_timer::time_point::max()) {}
  asio::steady_timer gate;
  bool hold_version = false;
  bool openapi_fails = false;
  std::string hash = "B";
  int versions = 0, nodes = 0, paths = 0, documents = 0;
  // With yield_each every request gives the loop a turn before it answers, as a real one does: two
  // asked at once are then both in flight, which max_in_flight records.
  bool yield_each = false;
  int in_flight = 0, max_in_flight = 0;
  std::vector<std::string> calls;

  asio::awaitable<void> request(std::string what) {
    calls.push_back(std::move(what));
    max_in_flight = std::max(max_in_flight, ++in_flight);
    if (yield_each) co_await asio::post(gate.get_executor(), asio::use_awaitable);
    --in_flight;
  }

  Api get(ResourceType type, ObjectKey key) override {
    EXPECT_EQ(type.plural, "nodes");
    EXPECT_EQ(key.name, "node-a");
    co_await request("node");
    ++nodes;
    co_return std::string(R"({"metadata":{"name":"node-a","uid":"uid-of-node-a","resourceVersion":"1"}})");
  }
  asio::awaitable<ApiResult<ServerVersion>> version() override {
    co_await request("version");
    ++versions;
    if (hold_version) {
      boost::system::error_code ec;
      co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none)
        throw boost::system::system_error(asio::error::operation_aborted);
    }
    co_return ServerVersion{1, 36, "v1.36.1"};
  }
  Api get_path(std::string path) override {
    co_await request(path == "/openapi/v3" ? "index" : "document");
    ++paths;
    if (openapi_fails) co_return make_local_error(kReasonConnection, "connection refused");
    if (path == "/openapi/v3") co_return index_with(hash);
    EXPECT_EQ(path, "/openapi/v3/apis/resource.k8s.io/v1?hash=" + hash);
    ++documents;
    co_return std::string(kDocument);
  }
  asio::awaitable<ApiResult<ListResult>> list(ResourceType, std::string, ListOptions) override { co_return ListResult{}; }
  asio::awaitable<ApiResult<std::unique_ptr<WatchStream>>> watch(ResourceType, std::string, WatchOptions) override {
    co_return make_local_error(kReasonConnection, "no watches here");
  }
  Api create(ResourceType, std::string, std::string) override { co_return std::string("{}"); }
  Api update(ResourceType, ObjectKey, std::string) override { co_return std::string("{}"); }
  Api patch(ResourceType, ObjectKey, std::string) override { co_return std::string("{}"); }
  asio::awaitable<ApiStatus> remove(ResourceType, ObjectKey, Preconditions) override { co_return Ok{}; }
};

struct Fixture {
  asio::io_context io;
  std::shared_ptr<FactsApi> api = std::make_shared<FactsApi>(io);
  std::vector<std::optional<ServerFacts::Facts>> answers;
  int cancelled = 0;

  ServerFacts make(std::chrono::milliseconds reuse_for = {}, std::shared_ptr<ServedFieldsCache> cache = nullptr) {
    return ServerFacts(io.get_executor(), api, ServerFactsOptions{"node-a", std::chrono::milliseconds(1),
                                                                  std::chrono::milliseconds(2), reuse_for, cache});
  }
  // Spawns a get(); its answer lands in answers[i].
  void ask(ServerFacts& facts, asio::cancellation_signal* cancel = nullptr) {
    const size_t i = answers.size();
    answers.emplace_back();
    auto done = [this, i](std::exception_ptr e, ServerFacts::Facts f) {
      if (e) ++cancelled;
      else answers[i] = std::move(f);
    };
    if (cancel) asio::co_spawn(io, facts.get(), asio::bind_cancellation_slot(cancel->slot(), done));
    else asio::co_spawn(io, facts.get(), done);
  }
  // One get(), run to its end: its answer (none if it was cancelled).
  std::optional<ServerFacts::Facts> answer(ServerFacts& facts) {
    ask(facts);
    io.run();
    return answers.back();
  }
  // One get() after another: each runs to its answer before the next is asked.
  void ask_in_turn(ServerFacts& facts, int times) {
    for (int i = 0; i < times; ++i) {
      ask(facts);
      io.run();
      io.restart();
    }
  }
};

TEST(ServerFacts, CallersThatComeWhileALookupRunsShareIt) {
  Fixture f;
  ServerFacts facts = f.make();
  f.api->hold_version = true;
  f.ask(facts);
  f.ask(facts);
  f.io.poll();  // both are waiting: the first for /version, the second for the first
  EXPECT_EQ(f.api->versions, 1);
  f.api->gate.cancel();
  f.io.run();
  ASSERT_TRUE(f.answers[0] && f.answers[1]);
  EXPECT_EQ(facts.stats().lookups, 1u);
  EXPECT_EQ(f.api->versions, 1);
  EXPECT_EQ(f.api->nodes, 1);
  EXPECT_EQ(f.api->paths, 2);  // the index and the document, once
  EXPECT_EQ(f.answers[1]->version.git_version, "v1.36.1");
  EXPECT_EQ(f.answers[1]->node_uid, "uid-of-node-a");
  EXPECT_EQ(f.answers[1]->served, (ServedFields{false, true}));
}

// One question at a time: an HTTP/1.1 client then answers all of them on one connection (one TLS
// handshake at start, not one per question).
TEST(ServerFacts, AsksOneQuestionAtATime) {
  Fixture f;
  ServerFacts facts = f.make();
  f.api->yield_each = true;
  const auto got = f.answer(facts);
  ASSERT_TRUE(got);
  EXPECT_EQ(f.api->max_in_flight, 1);
  EXPECT_EQ(f.api->calls, (std::vector<std::string>{"version", "node", "index", "document"}));
  EXPECT_EQ(got->node_uid, "uid-of-node-a");
}

TEST(ServerFacts, ALaterCallerAsksAgainUnlessTheAnswerIsRecent) {
  Fixture f;
  ServerFacts fresh = f.make();  // reuse_for 0
  f.ask_in_turn(fresh, 2);
  EXPECT_EQ(fresh.stats().lookups, 2u);
  EXPECT_EQ(f.api->versions, 2);

  Fixture g;
  ServerFacts reused = g.make(std::chrono::hours(1));
  g.ask_in_turn(reused, 2);
  EXPECT_EQ(reused.stats().lookups, 1u);
  EXPECT_EQ(g.api->versions, 1);
  ASSERT_TRUE(g.answers[1]);
  EXPECT_EQ(g.answers[1]->node_uid, "uid-of-node-a");
}

TEST(ServerFacts, ACancelledLookupHandsOverToAWaiter) {
  Fixture f;
  ServerFacts facts = f.make();
  f.api->hold_version = true;
  asio::cancellation_signal cancel;
  f.ask(facts, &cancel);
  f.ask(facts);
  f.io.poll();
  cancel.emit(asio::cancellation_type::terminal);  // the first driver stops mid-lookup
  f.io.poll();
  EXPECT_EQ(f.cancelled, 1);
  EXPECT_EQ(f.api->versions, 2);  // the waiter asked itself
  f.api->gate.cancel();
  f.io.run();
  ASSERT_TRUE(f.answers[1]);
  EXPECT_EQ(f.answers[1]->version.minor, 36);
  EXPECT_EQ(facts.stats().lookups, 2u);
}

TEST(ServerFacts, AnUnreadableOpenApiMeansTheVersionsFields) {
  Fixture f;
  ServerFacts facts = f.make();
  f.api->openapi_fails = true;
  f.ask(facts);
  f.io.run();
  ASSERT_TRUE(f.answers[0]);
  EXPECT_EQ(f.answers[0]->served, (ServedFields{true, true}));  // what 1.36 serves
  EXPECT_EQ(f.api->paths, 1);  // the index failed; the server answered /version at once: not asked again
}

// The test ServedFieldsCache: one entry, as the agent's file keeps.
class MemoryCache final : public ServedFieldsCache {
 public:
  std::string path;
  ServedFields fields;
  asio::awaitable<std::optional<ServedFields>> load(std::string document_path) override {
    if (document_path != path) co_return std::nullopt;
    co_return fields;
  }
  asio::awaitable<void> store(std::string document_path, ServedFields f) override {
    path = std::move(document_path);
    fields = f;
    co_return;
  }
};

TEST(ServerFacts, TheDocumentsFieldsAreKeptAndTheDocumentReadAgainOnlyWhenItsHashChanges) {
  Fixture f;
  auto cache = std::make_shared<MemoryCache>();
  ServerFacts first = f.make({}, cache);  // a start
  f.ask_in_turn(first, 1);
  ASSERT_TRUE(f.answers[0]);
  EXPECT_EQ(f.answers[0]->served, (ServedFields{false, true}));  // what the document serves
  EXPECT_EQ(f.api->documents, 1);
  EXPECT_EQ(cache->path, "/openapi/v3/apis/resource.k8s.io/v1?hash=B");
  EXPECT_EQ(cache->fields, (ServedFields{false, true}));

  // The next start: the index names the same document, so the fields come from the cache (changed
  // here to tell them from the document's).
  cache->fields = ServedFields{true, true};
  ServerFacts second = f.make({}, cache);
  f.ask_in_turn(second, 1);
  ASSERT_TRUE(f.answers[1]);
  EXPECT_EQ(f.answers[1]->served, (ServedFields{true, true}));
  EXPECT_EQ(f.api->documents, 1) << "the document was fetched although its hash was known";
  EXPECT_EQ(second.stats().documents, 0u);

  // The server's document changed (an upgrade, a feature gate): a new hash, read again and kept.
  f.api->hash = "C";
  ServerFacts third = f.make({}, cache);
  f.ask_in_turn(third, 1);
  ASSERT_TRUE(f.answers[2]);
  EXPECT_EQ(f.answers[2]->served, (ServedFields{false, true}));
  EXPECT_EQ(f.api->documents, 2);
  EXPECT_EQ(cache->path, "/openapi/v3/apis/resource.k8s.io/v1?hash=C");
}

}  // namespace
}  // namespace nvdra::k8s
