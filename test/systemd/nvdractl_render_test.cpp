// What nvdractl prints: aligned columns for people, JSON with stable field names for scripts.
#include "agent/ctl/render.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <sstream>

#include "agent/ctl/table.hpp"
#include "test/systemd/sample_snapshot.hpp"

using nvdra::ctl::Command;
using nvdra::ctl::Format;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST(NvdractlTable, ColumnsStartAtTheSameOffsetInEveryRowAndEmptyCellsShowADash) {
  nvdra::ctl::Table t({"A", "LONGER", "C"});
  t.add({"wide-value", "", "x"});
  t.add({"v", "y", "z"});
  const auto lines = lines_of(t.render());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "A           LONGER  C");
  EXPECT_EQ(lines[1], "wide-value  -       x");
  EXPECT_EQ(lines[2], "v           y       z");
}

TEST(NvdractlRender, DevicesTableHasOneRowPerDeviceWithHealth) {
  const auto lines = lines_of(nvdra::ctl::render(nvdra::test::sample_snapshot(), Command::kDevices, Format::kTable));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("DRIVER", 0), 0u);
  const auto health_col = lines[0].find("HEALTH");
  EXPECT_EQ(lines[2].substr(health_col, 9), "unhealthy");
  EXPECT_NE(lines[0].find("LAST XID"), std::string::npos);
  EXPECT_NE(lines[3].find("channel-0"), std::string::npos);
  EXPECT_EQ(lines[3].substr(lines[0].find("UUID"), 2), "- ");  // a channel has no uuid: a dash
}

TEST(NvdractlRender, StatusShowsReadinessDriversAndErrors) {
  const auto text = nvdra::ctl::render(nvdra::test::sample_snapshot(), Command::kStatus, Format::kTable);
  EXPECT_NE(text.find("ready            yes"), std::string::npos) << text;
  EXPECT_NE(text.find("3 (1 unhealthy, 1 health unknown)"), std::string::npos) << text;
  EXPECT_NE(text.find("hostManaged, nvidia-imex.service active (running)"), std::string::npos) << text;
  EXPECT_NE(text.find("compute-domain.nvidia.com  pending       no         waiting for kubelet"), std::string::npos)
      << text;
  EXPECT_NE(text.find("2026-11-18T"), std::string::npos) << text;
}

TEST(NvdractlRender, JsonClaimsAreAnArrayWithStableFieldNames) {
  const auto text = nvdra::ctl::render(nvdra::test::sample_snapshot(), Command::kClaims, Format::kJson);
  const auto v = boost::json::parse(text);
  ASSERT_TRUE(v.is_array());
  ASSERT_EQ(v.as_array().size(), 2u);
  const auto& c = v.as_array()[0].as_object();
  EXPECT_EQ(c.at("namespace").as_string(), "team-a");
  EXPECT_EQ(c.at("uid").as_string(), "0b6e1c2a-0000-4000-8000-000000000001");
  EXPECT_EQ(c.at("devices").as_array()[0].as_string(), "gpu-0");
}

TEST(NvdractlRender, JsonStatusCarriesEverySection) {
  const auto v = boost::json::parse(nvdra::ctl::render(nvdra::test::sample_snapshot(), Command::kStatus, Format::kJson));
  const auto& o = v.as_object();
  for (const char* key : {"version", "nodeName", "ready", "drivers", "devices", "claims", "imex", "lastErrors"})
    EXPECT_TRUE(o.contains(key)) << key;
  EXPECT_EQ(o.at("imex").as_object().at("activeState").as_string(), "active");
}

TEST(NvdractlRender, FabricShowsTheEndpointAndEachHeldPartition) {
  const auto s = nvdra::test::sample_snapshot();
  const auto table = lines_of(nvdra::ctl::render(s, Command::kFabric, Format::kTable));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0], "fabric manager: unix:/run/nvidia-fabricmanager/socket");
  EXPECT_NE(table[2].find("5,6,7,8"), std::string::npos) << table[2];
  EXPECT_NE(table[2].find("0b6e1c2a-0000-4000-8000-000000000001"), std::string::npos) << table[2];
  const auto v = boost::json::parse(nvdra::ctl::render(s, Command::kFabric, Format::kJson)).as_object();
  EXPECT_EQ(v.at("partitions").as_array()[0].as_object().at("id").to_number<uint64_t>(), 3u);
  const auto status = boost::json::parse(nvdra::ctl::render(s, Command::kStatus, Format::kJson)).as_object();
  EXPECT_EQ(status.at("fabric").as_object().at("manager").as_string(), "unix:/run/nvidia-fabricmanager/socket");
}
