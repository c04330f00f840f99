#pragma once
// The standard process_* series (names and help as Prometheus' Go and Python clients write them),
// read from /proc/self when the page is rendered. The cost is a read of /proc/self/stat, a listing
// of /proc/self/fd and one getrlimit: procfs is served from kernel memory and never waits on a
// disk, so this runs on the io_context thread with the rest of the page (figures in bench/agent).
// The start time never changes and is computed once (it needs /proc/stat's btime).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

namespace nvdra::metrics {

struct ProcessSample {
  double cpu_seconds = 0;      // utime + stime
  double virtual_bytes = 0;    // vsize
  double resident_bytes = 0;   // rss pages × page size
  double start_ticks = 0;      // starttime: clock ticks after boot
};

// Parses /proc/<pid>/stat text (the command name may hold spaces and parentheses). nullopt when
// the text is not a stat line.
std::optional<ProcessSample> parse_proc_stat(std::string_view stat, long ticks_per_second, long page_size);
// btime from /proc/stat text; nullopt when absent.
std::optional<int64_t> parse_boot_time(std::string_view proc_stat);

// Seconds since the epoch when this process started (0 when /proc cannot tell).
double process_start_time_seconds();
// The six process_* families for this process now; a value /proc cannot give is left out.
std::vector<prometheus::MetricFamily> collect_process_metrics(double start_time_seconds);

// The exposition page of `registry` plus the process_* families, as Go's client renders it: families
// without series left off, families by name and series by label values (two scrapes diff line by line).
std::string render_page(const prometheus::Registry& registry, double start_time_seconds);

}  // namespace nvdra::metrics
