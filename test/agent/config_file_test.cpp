#include "agent/config/config_file.hpp"

#include <gtest/gtest.h>

namespace nvdra::config {
namespace {

TEST(ConfigFile, ReadsScalarsSequencesAndGateMaps) {
  auto r = parse_config_text("node-name: n1\ndrivers: [gpu]\nfeature-gates:\n  MPSSupport: true\n", "f.yaml");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].key, "node-name");
  EXPECT_EQ((*r)[0].value, "n1");
  EXPECT_EQ((*r)[1].value, "gpu");
  EXPECT_TRUE((*r)[1].is_sequence);
  EXPECT_EQ((*r)[2].value, "MPSSupport=true");
  EXPECT_EQ((*r)[2].line, 3);
}

TEST(ConfigFile, BrokenYamlNamesFileAndLine) {
  auto r = parse_config_text("node-name: n1\ndrivers: [gpu\n", "/etc/nvdra/agent.yaml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("/etc/nvdra/agent.yaml:", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("invalid YAML"), std::string::npos);
}

TEST(ConfigFile, TopLevelMustBeAMapping) {
  auto r = parse_config_text("- a\n- b\n", "f.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("f.yaml:1:1: the top level must be a mapping"), std::string::npos)
      << r.error().message;
}

TEST(ConfigFile, DuplicateKeyIsRejected) {
  auto r = parse_config_text("node-name: a\nnode-name: b\n", "f.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("f.yaml:2:1: duplicate key 'node-name'"), std::string::npos) << r.error().message;
}

TEST(ConfigFile, EmptyFileConfiguresNothing) {
  auto r = parse_config_text("", "f.yaml");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
}

}  // namespace
}  // namespace nvdra::config
