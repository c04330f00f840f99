#include "agent/runtime/logging.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "agent/runtime/log_sink.hpp"

namespace nvdra::runtime {

bool stderr_is_journal() {
  // systemd.exec(5): JOURNAL_STREAM is "<dev>:<inode>" of the stream stdout/stderr are connected to.
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr) return false;
  struct stat st{};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) && ino == static_cast<unsigned long long>(st.st_ino);
}

LogShape choose_log_shape(LogFormat format) {
  if (format == LogFormat::kJson) return LogShape::kJson;
  return stderr_is_journal() ? LogShape::kJournal : LogShape::kText;
}

void init_logging(LogShape shape, spdlog::level::level_enum level) {
  auto sink = std::make_shared<StderrSink>(shape);
  auto def = std::make_shared<spdlog::logger>("nvdra", sink);
  def->set_level(level);
  def->flush_on(spdlog::level::warn);
  spdlog::drop_all();
  spdlog::set_default_logger(def);
  spdlog::set_level(level);
}

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  if (text == "trace") return spdlog::level::trace;
  if (text == "debug") return spdlog::level::debug;
  if (text == "info") return spdlog::level::info;
  if (text == "warn" || text == "warning") return spdlog::level::warn;
  if (text == "error") return spdlog::level::err;
  if (text == "off") return spdlog::level::off;
  return std::nullopt;
}

}  // namespace nvdra::runtime
