#include "agent/runtime/log_sink.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace nvdra::runtime {
namespace {

spdlog::details::log_msg record(spdlog::level::level_enum level, std::string_view text) {
  return spdlog::details::log_msg("cdi", level, text);
}

TEST(LogSink, JournalShapeCarriesSyslogPriority) {
  EXPECT_EQ(format_record(LogShape::kJournal, record(spdlog::level::err, "write failed")), "<3>cdi: write failed\n");
  EXPECT_EQ(format_record(LogShape::kJournal, record(spdlog::level::info, "x")), "<6>cdi: x\n");
  EXPECT_EQ(format_record(LogShape::kJournal, record(spdlog::level::warn, "x")), "<4>cdi: x\n");
}

TEST(LogSink, JsonShapeIsOneValidObjectPerLine) {
  const std::string line = format_record(LogShape::kJson, record(spdlog::level::warn, "quote \" and\nnewline"));
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v["level"].as_string(), "warning");
  EXPECT_EQ(v["logger"].as_string(), "cdi");
  EXPECT_EQ(v["msg"].as_string(), "quote \" and\nnewline");
}

TEST(LogSink, TextShapeHasLevelLetterAndName) {
  const std::string line = format_record(LogShape::kText, record(spdlog::level::info, "ready ms=12"));
  EXPECT_NE(line.find(" I cdi: ready ms=12\n"), std::string::npos) << line;
}

}  // namespace
}  // namespace nvdra::runtime
