// Reflector's before_first_watch: awaited once, after the first LIST and before the first WATCH (the
// agent opens its slice watch once it is ready); a watch resumed later does not wait again.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/reflector.hpp"

namespace nvdra::k8s {
namespace {

namespace asio = boost::asio;

// Lists nothing; every watch ends at once with a dropped connection. Records the calls in order.
class CallLog final : public ApiServer {
 public:
  using Api = asio::awaitable<ApiResult<std::string>>;
  std::vector<std::string> calls;
  std::function<void()> on_watch;

  asio::awaitable<ApiResult<ListResult>> list(ResourceType, std::string, ListOptions) override {
    calls.push_back("list");
    ListResult r;
    r.resource_version = "7";
    co_return r;
  }
  asio::awaitable<ApiResult<std::unique_ptr<WatchStream>>> watch(ResourceType, std::string, WatchOptions o) override {
    calls.push_back("watch from " + o.resource_version);
    on_watch();
    co_return make_local_error(kReasonConnection, "connection reset by peer");
  }
  Api get(ResourceType, ObjectKey) override { co_return std::string("{}"); }
  Api create(ResourceType, std::string, std::string) override { co_return std::string("{}"); }
  Api update(ResourceType, ObjectKey, std::string) override { co_return std::string("{}"); }
  Api patch(ResourceType, ObjectKey, std::string) override { co_return std::string("{}"); }
  asio::awaitable<ApiStatus> remove(ResourceType, ObjectKey, Preconditions) override { co_return Ok{}; }
  asio::awaitable<ApiResult<ServerVersion>> version() override { co_return ServerVersion{1, 35, "v1.35.0"}; }
};

TEST(ReflectorFirstWatch, TheHookRunsOnceBetweenTheFirstListAndTheFirstWatch) {
  std::optional<Reflector> reflector;  // outlives the io_context, which destroys its suspended run()
  asio::io_context io;
  auto api = std::make_shared<CallLog>();
  asio::steady_timer gate(io, asio::steady_timer::time_point::max());
  int hooks = 0;
  ReflectorOptions o;
  o.backoff_base = std::chrono::milliseconds(1);
  o.backoff_cap = std::chrono::milliseconds(2);
  o.before_first_watch = [&]() -> asio::awaitable<void> {
    ++hooks;
    api->calls.push_back("hook");
    boost::system::error_code ec;
    co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  };
  reflector.emplace(io.get_executor(), api, kResourceSlicesV1, o, nullptr);
  int watches = 0;
  api->on_watch = [&] {
    if (++watches == 3) io.stop();
  };
  asio::co_spawn(io, reflector->run(), asio::detached);

  io.poll();  // listed, then held by the hook: no watch yet
  EXPECT_EQ(api->calls, (std::vector<std::string>{"list", "hook"}));
  EXPECT_TRUE(reflector->synced());

  gate.cancel();
  asio::steady_timer deadline(io, std::chrono::seconds(30));
  deadline.async_wait([&](auto) { io.stop(); });
  io.run();
  // The first watch starts from the LIST's version; the dropped ones resume without the hook.
  ASSERT_EQ(watches, 3);
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(api->calls, (std::vector<std::string>{"list", "hook", "watch from 7", "watch from 7", "watch from 7"}));
}

TEST(ReflectorFirstWatch, WithoutAHookTheWatchFollowsTheList) {
  std::optional<Reflector> reflector;
  asio::io_context io;
  auto api = std::make_shared<CallLog>();
  reflector.emplace(io.get_executor(), api, kResourceSlicesV1, ReflectorOptions{}, nullptr);
  api->on_watch = [&] { io.stop(); };
  asio::co_spawn(io, reflector->run(), asio::detached);
  asio::steady_timer deadline(io, std::chrono::seconds(30));
  deadline.async_wait([&](auto) { io.stop(); });
  io.run();
  EXPECT_EQ(api->calls, (std::vector<std::string>{"list", "watch from 7"}));
}

}  // namespace
}  // namespace nvdra::k8s
