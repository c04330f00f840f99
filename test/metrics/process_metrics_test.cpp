// /proc parsing for the process_* series, on fixed text and on this process.
#include "agent/metrics/process_metrics.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <ctime>

namespace nvdra::metrics {
namespace {

// Fields 3…24 of a real /proc/<pid>/stat line; the command name holds a space and a ')'.
constexpr std::string_view kStat =
    "4242 (nvdra agent) x) S 1 4242 4242 0 -1 4194560 2047 0 0 0 150 50 0 0 20 0 6 0 "
    "123456 1073741824 3000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";

TEST(ProcessMetrics, ParsesStatAfterTheLastParenthesis) {
  const auto s = parse_proc_stat(kStat, 100, 4096);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 2.0);  // (150 + 50) ticks at 100 Hz
  EXPECT_DOUBLE_EQ(s->start_ticks, 123456);
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 1073741824);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 3000.0 * 4096);
}

TEST(ProcessMetrics, RejectsWhatIsNotAStatLine) {
  EXPECT_FALSE(parse_proc_stat("", 100, 4096));
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 2", 100, 4096));
  EXPECT_FALSE(parse_proc_stat(kStat, 0, 4096));
}

TEST(ProcessMetrics, BootTimeComesFromBtime) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000);
  EXPECT_FALSE(parse_boot_time("cpu 1 2 3\n"));
  EXPECT_FALSE(parse_boot_time("btime soon\n"));
}

double value(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families)
    if (f.name == name) return f.type == prometheus::MetricType::Counter ? f.metric.at(0).counter.value
                                                                          : f.metric.at(0).gauge.value;
  ADD_FAILURE() << name << " missing";
  return -1;
}

TEST(ProcessMetrics, ThisProcessIsDescribed) {
  const double start = process_start_time_seconds();
  EXPECT_LE(start, static_cast<double>(std::time(nullptr)) + 1);
  EXPECT_GT(start, static_cast<double>(std::time(nullptr)) - 24 * 3600);  // started within a day (this test)
  auto families = collect_process_metrics(start);
  EXPECT_EQ(families.size(), 6u);
  EXPECT_DOUBLE_EQ(value(families, "process_start_time_seconds"), start);
  EXPECT_GT(value(families, "process_resident_memory_bytes"), 0);
  EXPECT_GE(value(families, "process_virtual_memory_bytes"), value(families, "process_resident_memory_bytes"));
  EXPECT_GT(value(families, "process_max_fds"), 0);
  // One more open descriptor shows up in the next reading.
  const double before = value(families, "process_open_fds");
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(value(collect_process_metrics(start), "process_open_fds"), before + 1);
  ::close(fd);
}

}  // namespace
}  // namespace nvdra::metrics
