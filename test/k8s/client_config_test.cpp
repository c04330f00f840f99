#include "k8s/client_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "k8s/api_error.hpp"
#include "k8s/rate_limiter.hpp"

namespace nvdra::k8s {
namespace {

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("nvdra-kubeconfig-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "ca.crt") << "CA-PEM";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    std::ofstream(dir_ / "config") << text;
    return (dir_ / "config").string();
  }
  std::filesystem::path dir_;
};

constexpr const char* kConfig = R"(apiVersion: v1
kind: Config
current-context: b
contexts:
- {name: a, context: {cluster: other, user: u}}
- {name: b, context: {cluster: c, user: u}}
clusters:
- {name: other, cluster: {server: "https://10.0.0.1"}}
- {name: c, cluster: {server: "https://[::1]:6443", certificate-authority: ca.crt}}
users:
- {name: u, user: {tokenFile: token, client-certificate-data: Q0VSVA==, client-key-data: S0VZ}}
)";

TEST_F(KubeconfigTest, CurrentContextSelectsServerCaTokenFileAndClientCertificate) {
  auto cfg = load_kubeconfig(write(kConfig));
  ASSERT_TRUE(cfg.ok()) << cfg.error().describe();
  EXPECT_EQ(cfg->host, "::1");
  EXPECT_EQ(cfg->port, "6443");
  EXPECT_EQ(cfg->ca_pem, "CA-PEM");  // relative to the kubeconfig's folder
  EXPECT_EQ(cfg->token_file, (dir_ / "token").string());
  EXPECT_EQ(cfg->client_cert_pem, "CERT");
  EXPECT_EQ(cfg->client_key_pem, "KEY");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  EXPECT_TRUE(cfg->user_agent.starts_with("nvdra-agent/"));
}

TEST_F(KubeconfigTest, PlainHttpAndMissingContextAreRejectedWithTheField) {
  std::string text = kConfig;
  text.replace(text.find("https://[::1]"), 8, "http://");
  auto cfg = load_kubeconfig(write(text));
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error().field, "clusters[].cluster.server");
  text = kConfig;
  text.replace(text.find("current-context: b"), 18, "current-context: z");
  cfg = load_kubeconfig(write(text));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().message.find("\"z\""), std::string::npos);
}

TEST_F(KubeconfigTest, InClusterNeedsServiceEnvironmentAndReadsTheServiceAccount) {
  InClusterSource src;
  src.ca_file = (dir_ / "ca.crt").string();
  src.token_file = (dir_ / "ca.crt").string();
  EXPECT_FALSE(load_in_cluster(src).ok());
  src.env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  auto cfg = load_in_cluster(src);
  ASSERT_TRUE(cfg.ok()) << cfg.error().describe();
  EXPECT_EQ(cfg->host, "10.96.0.1");
  EXPECT_EQ(cfg->ca_pem, "CA-PEM");
  EXPECT_EQ(cfg->token_file, src.token_file);
}

TEST(ApiError, StatusBodyIsDecodedIntoCodeReasonMessageAndRetryAfter) {
  auto err = decode_status(429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow down",
                                   "details":{"retryAfterSeconds":3},"code":429})");
  EXPECT_TRUE(err.too_many_requests());
  EXPECT_EQ(err.reason, "TooManyRequests");
  EXPECT_EQ(err.message, "slow down");
  EXPECT_EQ(err.retry_after, std::chrono::seconds(3));
  EXPECT_EQ(err.to_error().code, ErrorCode::kUnavailable);
  auto html = decode_status(502, "<html>bad gateway</html>");
  EXPECT_EQ(html.http_status, 502);
  EXPECT_NE(html.message.find("bad gateway"), std::string::npos);
}

TEST(RateLimiter, BurstGoesAtOnceThenRequestsAreSpacedByQps) {
  RateLimiter limiter(5, 2);
  const auto t0 = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(limiter.reserve(t0), RateLimiter::Clock::duration::zero());
  EXPECT_EQ(limiter.reserve(t0), RateLimiter::Clock::duration::zero());
  const auto third = limiter.reserve(t0);
  EXPECT_NEAR(std::chrono::duration<double>(third).count(), 0.2, 1e-6);
  RateLimiter unlimited(0, 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.reserve(t0), RateLimiter::Clock::duration::zero());
}

}  // namespace
}  // namespace nvdra::k8s
