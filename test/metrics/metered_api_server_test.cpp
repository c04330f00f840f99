// MeteredApiServer: each request reported with its verb and status, watch restarts per resource,
// ResourceSlice writes with their outcome; results pass through unchanged.
#include "agent/metrics/metered_api_server.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <string>
#include <vector>

#include "test/support/run_awaitable.hpp"

namespace nvdra::metrics {
namespace {

namespace asio = boost::asio;

struct Recorder : Sink {
  std::vector<std::string> events;
  void api_request(std::string_view verb, int status) override {
    events.push_back(std::string(verb) + " " + std::to_string(status));
  }
  void watch_restart(std::string_view resource) override { events.push_back("restart " + std::string(resource)); }
  void slice_write(std::string_view op, bool ok) override {
    events.push_back("slice " + std::string(op) + (ok ? " ok" : " error"));
  }
};

// Answers every call with `fail` (when set) or a success.
struct FakeApi : k8s::ApiServer {
  std::optional<k8s::ApiError> fail;
  template <class T>
  k8s::ApiResult<T> answer(T value) {
    if (fail) return *fail;
    return value;
  }
  asio::awaitable<k8s::ApiResult<std::string>> get(k8s::ResourceType, k8s::ObjectKey) override {
    co_return answer(std::string("{}"));
  }
  asio::awaitable<k8s::ApiResult<k8s::ListResult>> list(k8s::ResourceType, std::string, k8s::ListOptions) override {
    co_return answer(k8s::ListResult{});
  }
  asio::awaitable<k8s::ApiResult<std::unique_ptr<k8s::WatchStream>>> watch(k8s::ResourceType, std::string,
                                                                           k8s::WatchOptions) override {
    if (fail) co_return *fail;
    co_return std::unique_ptr<k8s::WatchStream>();
  }
  asio::awaitable<k8s::ApiResult<std::string>> create(k8s::ResourceType, std::string, std::string) override {
    co_return answer(std::string("{}"));
  }
  asio::awaitable<k8s::ApiResult<std::string>> update(k8s::ResourceType, k8s::ObjectKey, std::string) override {
    co_return answer(std::string("{}"));
  }
  asio::awaitable<k8s::ApiResult<std::string>> patch(k8s::ResourceType, k8s::ObjectKey, std::string) override {
    co_return answer(std::string("{}"));
  }
  asio::awaitable<k8s::ApiStatus> remove(k8s::ResourceType, k8s::ObjectKey, k8s::Preconditions) override {
    co_return answer(k8s::Ok{});
  }
  asio::awaitable<k8s::ApiResult<k8s::ServerVersion>> version() override { co_return answer(k8s::ServerVersion{}); }
};

TEST(MeteredApiServer, ReportsVerbsStatusesRestartsAndSliceWrites) {
  asio::io_context io;
  auto fake = std::make_shared<FakeApi>();
  Recorder sink;
  MeteredApiServer api(fake, sink);
  auto run = [&](auto op) { return testing::run_awaitable(io, std::move(op)); };
  EXPECT_TRUE(run(api.get(k8s::kResourceClaimsV1, {"ns", "c"})).ok());
  EXPECT_TRUE(run(api.list(k8s::kResourceSlicesV1, "", {})).ok());
  EXPECT_TRUE(run(api.watch(k8s::kResourceSlicesV1, "", {})).ok());
  EXPECT_TRUE(run(api.watch(k8s::kResourceClaimsV1, "", {})).ok());
  EXPECT_TRUE(run(api.watch(k8s::kResourceSlicesV1, "", {})).ok());
  EXPECT_TRUE(run(api.create(k8s::kResourceSlicesV1, "", "{}")).ok());
  EXPECT_TRUE(run(api.create(k8s::kLeasesV1, "ns", "{}")).ok());
  EXPECT_TRUE(run(api.patch(k8s::kEventsV1, {"ns", "e"}, "{}")).ok());
  fake->fail = k8s::ApiError{409, "Conflict", "stale", {}};
  EXPECT_EQ(run(api.update(k8s::kResourceSlicesV1, {"", "s"}, "{}")).error().http_status, 409);
  fake->fail = k8s::make_local_error(k8s::kReasonConnection, "refused");
  EXPECT_FALSE(run(api.remove(k8s::kResourceSlicesV1, {"", "s"}, {})).ok());
  EXPECT_FALSE(run(api.version()).ok());
  EXPECT_EQ(sink.events, (std::vector<std::string>{"get 200", "list 200", "watch 200", "watch 200",
                                                   "restart resourceslices", "watch 200", "create 201",
                                                   "slice create ok", "create 201", "patch 200", "update 409",
                                                   "slice update error", "delete 0", "slice delete error",
                                                   "version 0"}));
}

}  // namespace
}  // namespace nvdra::metrics
