// kubeconfig boundaries: the server URL (Boost.URL) and *-data fields (OpenSSL base64), each bad
// input refused with a message naming what is wrong, a proxy's path prefix kept; and the watch
// timeout jitter that keeps a fleet off one shared reconnect beat.
#include "k8s/server_url.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "k8s/client_config.hpp"
#include "k8s/reflector.hpp"

namespace nvdra::k8s {
namespace {

TEST(ServerUrl, HostPortAndProxyPathPrefix) {
  auto u = parse_server_url("https://rancher.example.com/k8s/clusters/c-m-abc/");
  ASSERT_TRUE(u.ok()) << u.error().describe();
  EXPECT_EQ(u->host, "rancher.example.com");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->path_prefix, "/k8s/clusters/c-m-abc");
  u = parse_server_url("https://[fd00::1]:6443");
  ASSERT_TRUE(u.ok()) << u.error().describe();
  EXPECT_EQ(u->host, "fd00::1");
  EXPECT_EQ(u->port, "6443");
  EXPECT_EQ(u->path_prefix, "");
  u = parse_server_url("https://10.0.0.1:443/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->path_prefix, "");
}

TEST(ServerUrl, EachBadUrlIsRefusedSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://10.0.0.1", "https://"},
      {"https://user:pw@10.0.0.1", "user info"},
      {"https://10.0.0.1/?x=1", "query"},
      {"https://10.0.0.1#frag", "fragment"},
      {"https://10.0.0.1:99999", "invalid port"},
      {"https://10.0.0.1:0", "invalid port"},
      {"https://10.0.0.1:", "invalid port"},
      {"https:// spaces in host", "not a valid URL"},
      {"https://[::1", "not a valid URL"},
      {"https://", "host"},
      {"", "not a valid URL"},
  };
  for (const auto& [url, needle] : cases) {
    auto u = parse_server_url(url);
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_NE(u.error().message.find(needle), std::string::npos) << url << ": " << u.error().message;
    EXPECT_NE(u.error().message.find(std::string("\"") + url + "\""), std::string::npos) << u.error().message;
  }
}

TEST(Base64, StrictAsGoStdEncoding) {
  EXPECT_EQ(*decode_base64_strict("Q0VSVA=="), "CERT");
  EXPECT_EQ(*decode_base64_strict("S0VZ"), "KEY");
  EXPECT_EQ(*decode_base64_strict("Q0VS\nVA==\n"), "CERT");  // line breaks are ignored, as Go does
  EXPECT_EQ(*decode_base64_strict(""), "");
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  auto all = decode_base64_strict(
      "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9Q"
      "UVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6Ch"
      "oqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy"
      "8/T19vf4+fr7/P3+/w==");
  ASSERT_TRUE(all.ok()) << all.error().describe();
  EXPECT_EQ(*all, binary);
  for (const char* bad : {"Q0VSVA", "Q0VSVA=", "Q0V SVA==", "Q0VS-A==", "Q0VSVA===", "Q=VSVA==", "-----BEGIN",
                          "\xff\xfe\xfd\xfc"}) {
    auto r = decode_base64_strict(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_NE(r.error().message.find("not valid base64"), std::string::npos);
  }
}

class KubeconfigBoundary : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("nvdra-kubeconfig-b-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Result<ClientConfig> load(const std::string& server, const std::string& ca_data = "Q0E=") {
    std::ofstream(dir_ / "config") << "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                                      "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                      "clusters: [{name: c, cluster: {server: \""
                                   << server << "\", certificate-authority-data: \"" << ca_data
                                   << "\"}}]\nusers: [{name: u, user: {token: t}}]\n";
    return load_kubeconfig((dir_ / "config").string());
  }
  std::filesystem::path dir_;
};

TEST_F(KubeconfigBoundary, ProxyPathPrefixIsKeptForEveryRequest) {
  auto cfg = load("https://proxy.example:8443/k8s/clusters/c-abc");
  ASSERT_TRUE(cfg.ok()) << cfg.error().describe();
  EXPECT_EQ(cfg->host, "proxy.example");
  EXPECT_EQ(cfg->port, "8443");
  EXPECT_EQ(cfg->path_prefix, "/k8s/clusters/c-abc");
  EXPECT_EQ(cfg->ca_pem, "CA");
}

TEST_F(KubeconfigBoundary, BadBase64AndBadServerNameTheField) {
  auto cfg = load("https://10.0.0.1", "not base64!");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error().field, "clusters[].cluster.certificate-authority-data");
  EXPECT_NE(cfg.error().message.find("not valid base64"), std::string::npos) << cfg.error().message;
  cfg = load("https://a:b@10.0.0.1");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error().field, "clusters[].cluster.server");
  EXPECT_NE(cfg.error().message.find("user info"), std::string::npos) << cfg.error().message;
}

TEST(WatchTimeoutJitter, SpreadsOverOneToTwoTimesTheMinimum) {
  std::minstd_rand rng(42);
  std::set<long long> seen;
  for (int i = 0; i < 2000; ++i) {
    const auto t = jittered_watch_timeout(std::chrono::seconds(300), rng);
    ASSERT_GE(t.count(), 300);
    ASSERT_LT(t.count(), 600);
    seen.insert(t.count());
  }
  // Not one shared beat: the 2000 draws cover most of the 300 possible values.
  EXPECT_GT(seen.size(), 250u);
  EXPECT_LT(*seen.begin(), 310);
  EXPECT_GT(*seen.rbegin(), 590);
}

}  // namespace
}  // namespace nvdra::k8s
