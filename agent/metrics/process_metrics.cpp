#include "agent/metrics/process_metrics.hpp"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>

namespace nvdra::metrics {

namespace {

// Reads a small procfs file whole (procfs files report size 0: read until EOF).
std::optional<std::string> read_proc(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::optional<double> field_number(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return static_cast<double>(v);
}

// Open descriptors: entries of /proc/self/fd, less the one the listing itself holds.
std::optional<double> open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  double n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n - 1;
}

prometheus::MetricFamily gauge(const char* name, const char* help, double value,
                               prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily f{name, help, type, {}};
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) m.counter.value = value;
  else m.gauge.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

std::optional<ProcessSample> parse_proc_stat(std::string_view stat, long ticks_per_second, long page_size) {
  // "pid (comm) state f4 f5 …": fields after the last ')' are numbered from 3 (state).
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  std::vector<std::string_view> fields;
  while (!rest.empty()) {
    const auto start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const auto end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  // man 5 proc: utime (14), stime (15), starttime (22), vsize (23), rss (24); fields[0] is 3.
  auto at = [&](std::size_t field) { return field - 3 < fields.size() ? field_number(fields[field - 3]) : std::nullopt; };
  const auto utime = at(14), stime = at(15), start = at(22), vsize = at(23), rss = at(24);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  const double ticks = static_cast<double>(ticks_per_second);
  return ProcessSample{(*utime + *stime) / ticks, *vsize, *rss * static_cast<double>(page_size), *start};
}

std::optional<int64_t> parse_boot_time(std::string_view proc_stat) {
  for (std::size_t pos = 0; pos < proc_stat.size();) {
    const auto eol = proc_stat.find('\n', pos);
    const auto line = proc_stat.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    if (line.substr(0, 6) == "btime ") {
      int64_t v = 0;
      const auto digits = line.substr(6);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (ec == std::errc() && p == digits.data() + digits.size()) return v;
      return std::nullopt;
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return std::nullopt;
}

double process_start_time_seconds() {
  const auto stat = read_proc("/proc/self/stat");
  const auto system = read_proc("/proc/stat");
  if (!stat || !system) return 0;
  const auto sample = parse_proc_stat(*stat, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE));
  const auto boot = parse_boot_time(*system);
  if (!sample || !boot) return 0;
  return static_cast<double>(*boot) + sample->start_ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::vector<prometheus::MetricFamily> collect_process_metrics(double start_time_seconds) {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(6);
  if (const auto stat = read_proc("/proc/self/stat")) {
    if (const auto s = parse_proc_stat(*stat, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE))) {
      out.push_back(gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                          s->cpu_seconds, prometheus::MetricType::Counter));
      out.push_back(gauge("process_resident_memory_bytes", "Resident memory size in bytes.", s->resident_bytes));
      out.push_back(gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", s->virtual_bytes));
    }
  }
  if (const auto fds = open_fds()) out.push_back(gauge("process_open_fds", "Number of open file descriptors.", *fds));
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0)
    out.push_back(gauge("process_max_fds", "Maximum number of open file descriptors.",
                        static_cast<double>(limit.rlim_cur)));
  if (start_time_seconds > 0)
    out.push_back(gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                        start_time_seconds));
  return out;
}

std::string render_page(const prometheus::Registry& registry, double start_time_seconds) {
  auto families = registry.Collect();
  // A family without series (no error of that kind yet) is left off the page, as Go's client does.
  std::erase_if(families, [](const prometheus::MetricFamily& f) { return f.metric.empty(); });
  auto process = collect_process_metrics(start_time_seconds);
  families.insert(families.end(), std::make_move_iterator(process.begin()), std::make_move_iterator(process.end()));
  // Go's client orders families by name and series by label values; so does this page, so two
  // scrapes (and nvdra's and upstream's pages) diff line by line.
  std::sort(families.begin(), families.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& f : families)
    std::sort(f.metric.begin(), f.metric.end(), [](const auto& a, const auto& b) { return a.label < b.label; });
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return std::move(out).str();
}

}  // namespace nvdra::metrics
