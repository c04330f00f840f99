// Each fault of the "Done when" list, injected into the API-server double, with the
// slices converging afterwards.
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <filesystem>
#include <fstream>

#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::k8s::testing {
namespace {

using namespace asio::experimental::awaitable_operators;

boost::json::object fault(const char* method, int status, int count, int retry_after = -1) {
  boost::json::object f;
  f["method"] = method;
  f["resource"] = "resourceslices";
  f["status"] = status;
  f["count"] = count;
  if (retry_after >= 0) f["retry_after"] = retry_after;
  return f;
}

awaitable<std::size_t> count_status(Admin& admin, std::string method, int status) {
  auto log = co_await admin.get(std::string("/admin/requests"));
  std::size_t n = 0;
  for (const auto& r : log.as_array()) {
    if (r.at("method").as_string() == method && r.at("status").as_int64() == status) ++n;
  }
  co_return n;
}

TEST_F(DoubleTest, ServerErrorOnCreateIsRetriedUntilPublished) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    co_await admin.post(std::string("/admin/faults"), fault("POST", 500, 2));
    publisher->set_desired(make_gpus(4));
    co_await (publisher->run() || publisher->wait_converged());
    EXPECT_EQ(publisher->stats().failures, 2u);
    const auto served_500 = co_await count_status(admin, "POST", 500);
    EXPECT_EQ(served_500, 2u);
    const auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 1u);
  });
}

TEST_F(DoubleTest, ConflictOnUpdateIsRetriedOnFreshState) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  ConvergenceCounter converged(*publisher, io_.get_executor());
  run([&]() -> awaitable<void> {
    publisher->set_desired(make_gpus(4));
    auto scenario = [&]() -> awaitable<void> {
      co_await converged.wait_for(1);
      co_await admin.post(std::string("/admin/faults"), fault("PUT", 409, 1));
      publisher->set_desired(make_gpus(5));  // one more device: an in-place update
      co_await converged.wait_for(2);
    };
    co_await (publisher->run() || scenario());
    EXPECT_GE(publisher->stats().conflicts, 1u);
    const auto slices = co_await stored(*api);
    CO_ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices.at(0).content.devices.size(), 5u);
  });
}

TEST_F(DoubleTest, DroppedWatchResumesWithoutRelistAndStillSeesDeletions) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  ConvergenceCounter converged(*publisher, io_.get_executor());
  run([&]() -> awaitable<void> {
    publisher->set_desired(make_gpus(4));
    auto scenario = [&]() -> awaitable<void> {
      co_await converged.wait_for(1);
      // Drop a watch that is open: converging can come before the watch stream is established.
      co_await wait_for_open_watch(admin);
      co_await admin.post(std::string("/admin/drop-watches"));
      co_await wipe_node_slices(admin);
      co_await converged.wait_for(2);
    };
    co_await (publisher->run() || scenario());
    CO_ASSERT_TRUE(publisher->watch_stats() != nullptr);
    EXPECT_GE(publisher->watch_stats()->resumes, 1u);
    EXPECT_EQ(publisher->watch_stats()->lists, 1u);
    const auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 1u);
  });
}

TEST_F(DoubleTest, CompactionMakesTheWatchRelistAndConverge) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  ConvergenceCounter converged(*publisher, io_.get_executor());
  run([&]() -> awaitable<void> {
    publisher->set_desired(make_gpus(4));
    auto scenario = [&]() -> awaitable<void> {
      co_await converged.wait_for(1);
      co_await wipe_node_slices(admin);   // the deletion lands in history…
      co_await admin.post(std::string("/admin/compact"));  // …which is compacted, and the watch dropped
      co_await converged.wait_for(2);
    };
    co_await (publisher->run() || scenario());
    CO_ASSERT_TRUE(publisher->watch_stats() != nullptr);
    EXPECT_GE(publisher->watch_stats()->lists, 1u);
    const auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 1u);
  });
}

TEST_F(DoubleTest, TooManyRequestsIsRetriedAfterRetryAfter) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    co_await admin.post(std::string("/admin/faults"), fault("POST", 429, 1, 1));
    publisher->set_desired(make_gpus(4));
    co_await (publisher->run() || publisher->wait_converged());
    const auto throttled = co_await count_status(admin, "POST", 429);
    const auto created = co_await count_status(admin, "POST", 201);
    EXPECT_EQ(throttled, 1u);
    EXPECT_EQ(created, 1u);
    EXPECT_EQ(publisher->stats().failures, 0u);  // the client waited and retried by itself
  });
}

TEST_F(DoubleTest, ExpiredTokenFileIsReReadAfterRotation) {
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  ConvergenceCounter converged(*publisher, io_.get_executor());
  run([&]() -> awaitable<void> {
    publisher->set_desired(make_gpus(4));
    auto scenario = [&]() -> awaitable<void> {
      co_await converged.wait_for(1);
      // The server stops accepting the old token; the kubelet-side rotation writes the new one.
      boost::json::object tokens;
      tokens["tokens"] = boost::json::array{"rotated-token"};
      co_await admin.post(std::string("/admin/tokens"), tokens);
      // Atomically, as kubelet's projected token volume swaps it: a reader never sees it half-written.
      std::ofstream(double_->dir() + "/token.new") << "rotated-token\n";
      std::filesystem::rename(double_->dir() + "/token.new", double_->dir() + "/token");
      co_await wipe_node_slices(admin);
      co_await converged.wait_for(2);
    };
    co_await (publisher->run() || scenario());
    const auto unauthorized = co_await count_status(admin, "POST", 401);
    const auto created = co_await count_status(admin, "POST", 201);
    EXPECT_EQ(created, 2u);
    EXPECT_LE(unauthorized, 1u);
    const auto slices = co_await stored(*api);
    EXPECT_EQ(slices.size(), 1u);
  });
}

TEST_F(DoubleTest, UntrustedServerCertificateIsRefusedUnlessKubeconfigSaysInsecure) {
  auto cfg = double_->client_config();
  cfg.ca_pem.clear();  // system CAs only: the double's throwaway CA is not among them
  auto strict = make_api(cfg);
  cfg.insecure_skip_tls_verify = true;
  auto insecure = make_api(cfg);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    auto refused = co_await strict->version();
    CO_ASSERT_TRUE(!refused.ok());
    EXPECT_EQ(refused.error().reason, kReasonConnection);
    EXPECT_NE(refused.error().message.find("TLS handshake"), std::string::npos) << refused.error().message;
    auto accepted = co_await insecure->version();
    EXPECT_TRUE(accepted.ok());
    auto log = co_await admin.get(std::string("/admin/requests"));
    for (const auto& r : log.as_array()) {
      if (r.at("path").as_string() == "/version") {
        EXPECT_TRUE(r.at("user_agent").as_string().starts_with("nvdra-agent/")) << r.at("user_agent").as_string();
      }
    }
  });
}

}  // namespace
}  // namespace nvdra::k8s::testing
