// Hostile or mistaken config files (issue #22 item 4): each is refused with one error naming the
// file and what is wrong, in bounded memory and time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/config/config_file.hpp"
#include "k8s/client_config.hpp"

namespace nvdra::config {
namespace {

void expect_refused(const Result<std::vector<FileEntry>>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(HostileConfigFile, DeepNestingIsRefusedNotACrash) {
  for (const char* open : {"[", "{a: "}) {
    std::string text = "node-name: ";
    for (int i = 0; i < 100000; ++i) text += open;
    expect_refused(parse_config_text(text, "f.yaml"), "nested deeper than");
  }
}

TEST(HostileConfigFile, AliasExpansionIsBounded) {
  // A billion-laughs list: a 64 KiB anchored value repeated 100000 times by alias would be 6 GB.
  std::string text = "x: &x " + std::string(64 * 1024, 'a') + "\ndrivers: [";
  for (int i = 0; i < 100000; ++i) text += i ? ",*x" : "*x";
  text += "]\n";
  expect_refused(parse_config_text(text, "f.yaml"), "'drivers' expands to more than 1024 KiB");
  // Nested anchors: items are not plain values.
  expect_refused(parse_config_text("a: &a [x, x]\nb: &b [*a, *a]\ndrivers: [*b, *b]\n", "f.yaml"),
                 "'b' items must be plain values");
}

TEST(HostileConfigFile, NonScalarKeysAndValuesAreRefused) {
  expect_refused(parse_config_text("? [a, b]\n: c\n", "f.yaml"), "keys must be option names");
  expect_refused(parse_config_text("node-name: {a: b}\n", "f.yaml"), "'node-name' must be a plain value or a list");
  expect_refused(parse_config_text("\"\\xff\": [\n", "f.yaml"), "invalid YAML");
}

class HostileFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("nvdra-hostile-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(HostileFile, EndlessOrHugeFilesAreRefusedUnread) {
  expect_refused(read_config_file("/dev/zero"), "/dev/zero: config file is larger than 1024 KiB");
  expect_refused(read_config_file(write("big.yaml", "# " + std::string(2 << 20, 'x') + "\n")), "larger than 1024 KiB");
  expect_refused(read_config_file(write("nul.yaml", std::string("node-name: a\0b\n", 15))), "NUL bytes");
  expect_refused(read_config_file((dir_ / "missing.yaml").string()), "cannot read config file");
}

TEST_F(HostileFile, KubeconfigThatIsNotOneIsRefusedWithTheReason) {
  auto r = k8s::load_kubeconfig("/dev/zero");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("larger than 4096 KiB"), std::string::npos) << r.error().message;
  r = k8s::load_kubeconfig(write("deep", "clusters: " + std::string(100000, '[')));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper than"), std::string::npos) << r.error().message;
  r = k8s::load_kubeconfig(write("types", "current-context: [a]\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("wrong field type"), std::string::npos) << r.error().message;
  r = k8s::load_kubeconfig(write("names", "current-context: x\ncontexts: [{name: {a: b}, context: {}}]\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kubeconfig"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace nvdra::config
